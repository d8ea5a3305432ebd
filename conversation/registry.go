package conversation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"switchboard/call"
	"switchboard/sip"
	xfer "switchboard/transfer"
	"switchboard/webhook"
)

// tellTimeout bounds telling the model that a transfer failed: the model
// session is local or already connected, so a send that takes longer is
// stuck and the caller is better served by moving on.
const tellTimeout = 5 * time.Second

// Transfer statuses beyond webhook's accepted, completed and failed.
const transferProgress = "progress"

// ErrNotControlled means a call is not webhook-routed: no controller can
// attach to it.
var ErrNotControlled = errors.New("conversation: the call is not webhook-routed")

// Registry keeps the calls the Router sent to a conversation, so the API
// can steer them (refer, hangup, dtmf, a controller's socket). A call
// leaves it when its conversation closes.
type Registry struct {
	mu    sync.Mutex
	calls map[string]*Routed
	wg    sync.WaitGroup // transfers in progress
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{calls: map[string]*Routed{}} }

// Get returns the routed call id.
func (reg *Registry) Get(id string) (*Routed, bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	r, ok := reg.calls[id]
	return r, ok
}

// Wait blocks until the transfers the registry follows are over.
func (reg *Registry) Wait() { reg.wg.Wait() }

// track registers conv, the conversation of the call on p (cc when it is
// a controlled one), until it closes.
func (reg *Registry) track(p call.Phone, conv call.Conversation, cc *Controlled, b *bridge) call.Conversation {
	r := &Routed{phone: p, cc: cc, b: b, reg: reg}
	reg.mu.Lock()
	reg.calls[p.ID()] = r
	reg.mu.Unlock()
	return tracked{Conversation: conv, reg: reg, id: p.ID()}
}

// tracked is a conversation that leaves the registry when it closes.
type tracked struct {
	call.Conversation
	reg *Registry
	id  string
}

// HearsFromAnswer passes on the conversation's own (call.HearsFromAnswer:
// a stream hears a placed call's callee from the answer on).
func (t tracked) HearsFromAnswer() bool {
	h, ok := t.Conversation.(call.HearsFromAnswer)
	return ok && h.HearsFromAnswer()
}

func (t tracked) Close() error {
	err := t.Conversation.Close()
	t.reg.mu.Lock()
	delete(t.reg.calls, t.id)
	t.reg.mu.Unlock()
	return err
}

// Routed is a call in the registry.
type Routed struct {
	phone call.Phone
	cc    *Controlled // nil: an agent's call
	b     *bridge     // an agent's bridge (nil for the loopback)
	reg   *Registry
}

// Phone is the call.
func (r *Routed) Phone() call.Phone { return r.phone }

// TeamID owns the call.
func (r *Routed) TeamID() string { return r.phone.Route().TeamID }

// Attach reserves a webhook-routed call for a new controller (see
// Controlled.Attach); ErrNotControlled for an agent's call.
func (r *Routed) Attach() (*ControllerSession, error) {
	if r.cc == nil {
		return nil, ErrNotControlled
	}
	return r.cc.Attach()
}

// Hangup ends the call with reason: through its controlled conversation
// when it has one (so the webhook says the controller ended it). headers
// go with the BYE.
func (r *Routed) Hangup(reason string, headers ...call.Header) {
	if r.cc != nil {
		r.cc.Hangup(reason, webhook.EndedByController, headers...)
		return
	}
	r.phone.Hangup(reason, headers...)
}

// SendToStream hands a webhook-routed call to a bot's stream (see
// Controlled.SendToStream) and returns the stream's sid; ErrNotControlled
// for another call. The upgrade is signed with the number's webhook
// secret, which the bot can check.
func (r *Routed) SendToStream(ctx context.Context, target call.StreamTarget) (string, error) {
	if r.cc == nil {
		return "", ErrNotControlled
	}
	if w := r.phone.Route().Webhook; w != nil && target.SigningSecret == "" {
		target.SigningSecret = w.SigningSecret
	}
	st, err := r.cc.SendToStream(ctx, target)
	if err != nil {
		return "", err
	}
	return st.SID(), nil
}

// SendDTMF plays digits to the caller's side.
func (r *Routed) SendDTMF(ctx context.Context, digits string) error {
	return r.phone.SendDTMF(ctx, digits)
}

// Transfer sends REFER to the caller's side and follows it in the
// background: the returned channel gets nil once the far end accepted it,
// or the error that refused it. The progress goes to the call record, the
// controller and the webhook; the call ends when the transfer succeeds,
// and the model is told when it fails. headers go with the REFER.
func (r *Routed) Transfer(target string, headers ...call.Header) <-chan error {
	accepted := make(chan error, 1)
	r.reg.wg.Add(1)
	go func() {
		defer r.reg.wg.Done()
		defer contain(r.phone.Logger(), r.phone, "transfer")
		r.transfer(target, headers, accepted)
	}()
	return accepted
}

func (r *Routed) transfer(target string, headers []call.Header, accepted chan<- error) {
	p := r.phone
	log := p.Logger().With().Str("target_uri", target).Logger()
	report := func(status string, code int) {
		p.Note(call.Note{Kind: call.NoteTransfer, Text: status, Data: map[string]any{"target_uri": target, "sip_status": code, "by": "api"}})
		if r.cc != nil {
			r.cc.transferred(target, status, code)
		}
	}
	first := true
	err := p.Transfer(p.Context(), target, func(code int) {
		switch {
		case first:
			first = false
			accepted <- nil
			report(webhook.TransferAccepted, code)
		case code < 200:
			report(transferProgress, code)
		}
	}, headers...)
	if first {
		accepted <- err
		return
	}
	if err == nil {
		log.Info().Msg("transfer completed: ending our leg")
		report(webhook.TransferCompleted, 200)
		r.Hangup("transferred")
		return
	}
	code := 0
	var se *sip.StatusError
	if errors.As(err, &se) {
		code = se.Status
	}
	log.Warn().Err(err).Msg("transfer failed: the call stays")
	report(webhook.TransferFailed, code)
	if r.cc != nil {
		msg := fmt.Sprintf("The transfer of the call to %s failed", target)
		if se != nil {
			msg += fmt.Sprintf(": %d %s", se.Status, se.Reason)
		}
		ctx, cancel := context.WithTimeout(p.Context(), tellTimeout)
		defer cancel()
		if err := r.cc.Tell(ctx, msg+". The caller is still on the line: tell them."); err != nil {
			log.Debug().Err(err).Msg("model not told about the failed transfer")
		}
	}
}

// bridge is the conversation's bridge: an agent's, or a controlled
// call's (nil for the line test).
func (r *Routed) bridge() *bridge {
	if r.cc != nil {
		return r.cc.b
	}
	return r.b
}

// Handoff starts a transfer of the call (POST /v1/calls/{id}/transfer):
// the request is checked (a 400 *httpx.Error names the field), then the
// caller holds while the transfer runs in the background; its steps go
// to the call record, the controller and the webhook. ErrTransferRunning
// while another transfer runs, ErrHandedOff once the caller talks with a
// human, ErrNoTransfers for the line test.
func (r *Routed) Handoff(ctx context.Context, req xfer.Request) (*xfer.Transfer, error) {
	b := r.bridge()
	if b == nil {
		return nil, ErrNoTransfers
	}
	req.By = "api"
	return b.request(ctx, handoffCmd{op: opTransfer, req: req})
}

// Hold puts the caller on hold with audio (music, silence, a WAV file or
// a prompt): the model hears nothing until Resume.
func (r *Routed) Hold(ctx context.Context, audio string) error {
	b := r.bridge()
	if b == nil {
		return ErrNoTransfers
	}
	_, err := b.request(ctx, handoffCmd{op: opHold, audio: audio})
	return err
}

// Resume takes the caller off hold: they hear the conversation again.
func (r *Routed) Resume(ctx context.Context) error {
	b := r.bridge()
	if b == nil {
		return ErrNoTransfers
	}
	_, err := b.request(ctx, handoffCmd{op: opResume})
	return err
}
