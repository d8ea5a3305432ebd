package sipleg

import (
	"context"
	"errors"

	"switchboard/call"
	"switchboard/sip"
)

// NewPlaced returns the leg of a call the SIP server placed
// (sip.Server.Place): its Answer dials.
func NewPlaced(in *sip.Call, opts Options, md call.MachineDetection) *Leg {
	l := New(in, opts)
	l.info.Direction, l.info.MachineDetection = call.DirectionOutbound, md
	l.placed = true
	return l
}

// dialError is the call's view of a dial that did not end in an answer.
func dialError(err error) error {
	var de *sip.DialError
	if !errors.As(err, &de) {
		return &call.DialError{Progress: call.ProgressFailed, Reason: err.Error(), Err: err}
	}
	out := &call.DialError{Progress: call.ProgressFailed, SIPStatus: de.Status, Reason: de.Reason, Err: err}
	switch {
	case errors.Is(de.Err, sip.ErrRingTimeout):
		out.Progress, out.Reason = call.ProgressNoAnswer, "no answer within the ring timeout"
	case errors.Is(de.Err, sip.ErrLocalHangup), errors.Is(de.Err, sip.ErrShutdown), errors.Is(de.Err, sip.ErrRejected),
		errors.Is(de.Err, context.Canceled):
		out.Progress, out.Reason = call.ProgressCanceled, "canceled while ringing"
	case de.Err != nil:
		out.Reason = de.Err.Error()
	case de.Status == 486 || de.Status == 600 || de.Status == 603:
		out.Progress, out.ByCallee = call.ProgressBusy, true
	case de.Status == 408 || de.Status == 480 || de.Status == 487:
		out.Progress, out.ByCallee = call.ProgressNoAnswer, true
	default:
		out.ByCallee = true
	}
	return out
}

// Replaces is the value of a Replaces header naming the leg's dialog
// (RFC 3891): a REFER with it asks another party to take the leg's place
// (an attended transfer).
func (l *Leg) Replaces() string { return l.in.Replaces() }
