package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchboard/call"
	"switchboard/sip"
)

// referRefusals are the REFER refusals mode auto bridges after: the peer
// forbids REFER (403), does not allow the method (405) or does not
// implement it (501). Any other refusal is the transfer's outcome.
var referRefusals = map[int]bool{403: true, 405: true, 501: true}

// refer sends the caller's side a REFER to the target (a blind transfer)
// and follows its NOTIFYs. For mode auto, fallback says the REFER was
// refused in a way a bridge gets around: 403, 405 or 501, a caller's leg
// that cannot be referred (a browser), or no NOTIFY at all within the
// REFER NOTIFY timeout after the REFER was accepted (the REFER went
// nowhere).
func (t *Transfer) refer(ctx context.Context, auto bool) (res Result, fallback bool) {
	return t.sendRefer(ctx, t.req.TargetURI, auto)
}

// attended calls the human (the consultation leg), briefs them when a
// briefing was given, connects the caller to them, then asks the caller's
// side to replace the consultation leg with a call of its own to the
// target (REFER with Replaces, RFC 5589 section 7): the PBX splices the
// call and the appliance's two legs end. A REFER the caller's side
// refuses leaves the caller bridged through the appliance.
func (t *Transfer) attended(ctx context.Context) Result {
	var brief <-chan []byte
	if t.req.Accept != "" {
		brief = t.render(ctx)
	}
	if res := t.dial(ctx); res != nil {
		return *res
	}
	if brief != nil {
		if res := t.brief(ctx, brief); res != nil {
			return *res
		}
	}
	res := t.connect()
	if res.Status != StatusBridged {
		return res
	}
	replaces := t.leg.Replaces()
	if replaces == "" {
		res.FellBack, res.Reason = true, "the consultation leg has no dialog to replace"
		return res
	}
	referred, _ := t.sendRefer(ctx, sip.ReferTarget(t.req.TargetURI, replaces), false)
	if referred.Status == StatusReferred {
		return referred
	}
	if ctx.Err() != nil {
		return Result{Status: StatusCallerLeft, Reason: "the caller hung up"}
	}
	t.log.Info().Str("reason", referred.Reason).Msg("REFER with Replaces not taken: the caller stays bridged")
	res.FellBack, res.Reason, res.SIPStatus = true, "REFER with Replaces not taken: "+referred.Reason, referred.SIPStatus
	return res
}

// notifyStep is a NOTIFY's status seen by sendRefer.
type notifyStep struct {
	accepted bool // the REFER's own 2xx
	code     int
}

// sendRefer sends REFER with referTo to the caller's side and follows it
// to its outcome (see refer for fallback).
func (t *Transfer) sendRefer(ctx context.Context, referTo string, auto bool) (Result, bool) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	steps := make(chan notifyStep, 16)
	done := make(chan error, 1)
	first := true
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		done <- t.c.Transfer(rctx, referTo, func(code int) {
			s := notifyStep{accepted: first, code: code}
			first = false
			select {
			case steps <- s:
			default:
			}
		}, t.req.Headers...)
	}()
	var quiet <-chan time.Time // no NOTIFY yet after the 202
	accepted, notified := false, false
	for {
		select {
		case s := <-steps:
			if s.accepted {
				accepted = true
				t.update(StatusDialing, s.code, "the caller's side accepted the REFER")
				if auto {
					timer := time.NewTimer(t.s.opts.ReferNotifyTimeout)
					defer timer.Stop()
					quiet = timer.C
				}
				continue
			}
			notified, quiet = true, nil
			if s.code == 180 || s.code == 183 {
				t.update(StatusRinging, s.code, "")
			}
		case <-quiet:
			cancel()
			<-done
			return Result{Status: StatusFailed, Reason: fmt.Sprintf("no NOTIFY within %s of the REFER's acceptance", t.s.opts.ReferNotifyTimeout)}, true
		case err := <-done:
			// The REFER's progress came before its end, but select may
			// take the end first: what is still queued counts.
			for queued := true; queued; {
				select {
				case s := <-steps:
					accepted, notified = accepted || s.accepted, notified || !s.accepted
				default:
					queued = false
				}
			}
			if err == nil {
				return Result{Status: StatusReferred, SIPStatus: 200}, false
			}
			if ctx.Err() != nil {
				return Result{Status: StatusCallerLeft, Reason: "the caller hung up"}, false
			}
			return referOutcome(err, accepted, notified, auto)
		}
	}
}

// referOutcome maps a failed REFER to its outcome, and says whether mode
// auto bridges after it.
func referOutcome(err error, accepted, notified, auto bool) (Result, bool) {
	if errors.Is(err, call.ErrNotSupported) {
		return Result{Status: StatusFailed, Reason: "the caller's leg cannot be referred"}, auto
	}
	var se *sip.StatusError
	if !errors.As(err, &se) {
		// No final NOTIFY in time, or the REFER's own transaction failed.
		return Result{Status: StatusFailed, Reason: err.Error()}, auto && !notified
	}
	r := Result{Status: StatusFailed, SIPStatus: se.Status, Reason: se.Reason}
	if !accepted {
		r.Reason = fmt.Sprintf("the caller's side refused the REFER: %d %s", se.Status, se.Reason)
		return r, auto && referRefusals[se.Status]
	}
	switch {
	case se.Status == 603:
		r.Status = StatusDeclined
	case se.Status == 486 || se.Status == 600:
		r.Status = StatusBusy
	case se.Status == 408 || se.Status == 480 || se.Status == 487:
		r.Status = StatusNoAnswer
	}
	return r, false
}
