package transfer

import (
	"context"
	"errors"
	"sync"
	"time"

	"switchboard/call"
)

// dial calls the human: their leg joins the call (hearing nothing, heard
// by nobody) and dials; dial returns nil once they answered, or the
// outcome of a dial that did not end in an answer.
func (t *Transfer) dial(ctx context.Context) *Result {
	t.update(StatusDialing, 0, "")
	leg, err := t.s.opts.Dialer.Dial(ctx, t.target, DialOptions{RingTimeout: t.req.Timeout, Codecs: t.codecs(), Headers: t.req.Headers})
	if err != nil {
		return &Result{Status: StatusFailed, Reason: "dial: " + err.Error()}
	}
	var once sync.Once
	rl := &ringingLeg{Leg: leg, ringing: func() { once.Do(func() { t.update(StatusRinging, 180, "") }) }}
	p, err := t.c.Join(rl, call.InbandAuto)
	if err != nil {
		hctx, cancel := context.WithTimeout(context.Background(), legCloseTimeout)
		defer cancel()
		_ = leg.Hangup(hctx, "transfer not started")
		_ = leg.Close()
		return &Result{Status: StatusFailed, Reason: "join: " + err.Error()}
	}
	t.human, t.leg = p, leg
	if err := leg.Answer(ctx); err != nil {
		res := dialResult(err)
		if ctx.Err() != nil {
			res = Result{Status: StatusCallerLeft, Reason: "the caller hung up"}
		}
		return &res
	}
	t.update(StatusAnswered, 200, "")
	return nil
}

// legCloseTimeout bounds ending a leg that never dialed.
const legCloseTimeout = 5 * time.Second

// dialResult is the outcome of a dial that failed.
func dialResult(err error) Result {
	var de *call.DialError
	if !errors.As(err, &de) {
		return Result{Status: StatusFailed, Reason: err.Error()}
	}
	r := Result{Status: StatusFailed, SIPStatus: de.SIPStatus, Reason: de.Reason}
	switch {
	case de.SIPStatus == 603:
		r.Status = StatusDeclined
	case de.SIPStatus == 486 || de.SIPStatus == 600 || de.Progress == call.ProgressBusy:
		r.Status = StatusBusy
	case de.Progress == call.ProgressNoAnswer:
		r.Status = StatusNoAnswer
	}
	return r
}

// ringingLeg is the human's leg as it joins the call: the same leg, whose
// ringing (a 180 or 183 to its INVITE) the transfer reports.
type ringingLeg struct {
	Leg
	ringing func()
}

// Start starts the leg with a sink that also reports its ringing.
func (l *ringingLeg) Start(sink call.LegSink, o call.LegOptions) error {
	return l.Leg.Start(ringingSink{LegSink: sink, ringing: l.ringing}, o)
}

type ringingSink struct {
	call.LegSink
	ringing func()
}

func (s ringingSink) Ringing() {
	s.ringing()
	s.LegSink.Ringing()
}
