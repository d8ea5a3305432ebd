package sipleg

import (
	"context"
	"errors"

	"switchboard/call"
	"switchboard/sip"
)

// Handler runs the calls the SIP server admits (it is a sip.Handler) and
// those it places, each on a Leg, with the call manager.
type Handler struct {
	m    *call.Manager
	opts Options
}

var _ sip.Handler = (*Handler)(nil)

// NewHandler returns the handler of m's SIP calls; opts.Ports is
// required.
func NewHandler(m *call.Manager, opts Options) (*Handler, error) {
	if m == nil || opts.Ports == nil {
		return nil, errors.New("sipleg: handler needs a call manager and a port pool")
	}
	return &Handler{m: m, opts: opts}, nil
}

// HandleCall runs one admitted INVITE from admission to its end
// (sip.Handler).
func (h *Handler) HandleCall(ctx context.Context, in *sip.Call) {
	h.m.Run(ctx, New(in, h.opts), in.Logger())
}

// Place runs a call the SIP server placed (sip.Server.Place) on a placed
// leg, in the background: its Answer dials when the call is ready.
func (h *Handler) Place(in *sip.Call, md call.MachineDetection, done func()) *call.Call {
	return h.m.Start(in.Context(), NewPlaced(in, h.opts, md), in.Logger(), done)
}

// Leg returns a leg of the handler's options for a dialog the SIP server
// placed to join a live call (a bridged transfer's callee).
func (h *Handler) Leg(in *sip.Call) *Leg {
	l := New(in, h.opts)
	l.placed = true
	return l
}
