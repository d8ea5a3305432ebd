package conversation

import (
	"context"
	"errors"
	"time"

	"switchboard/call"
	"switchboard/realtime"
	"switchboard/sip"
	xfer "switchboard/transfer"
	"switchboard/webhook"
)

// Webhooks delivers signed events (webhook.Dispatcher).
type Webhooks interface {
	Deliver(ctx context.Context, t webhook.Target, ev webhook.Event) (webhook.Result, error)
	DeliverAsync(t webhook.Target, ev webhook.Event, done func(webhook.Result, error)) error
}

// target is the webhook of a webhook-routed call, from its route.
func target(r call.Route) (webhook.Target, error) {
	w := r.Webhook
	if w == nil {
		return webhook.Target{}, errors.New("the number has no webhook")
	}
	return webhook.Target{ID: w.ID, URL: w.URL, SigningSecret: w.SigningSecret, AuthToken: w.AuthToken, AuthURL: w.AuthURL}, nil
}

// announce POSTs realtime.call.incoming to the number's webhook within
// the ring window (ctx) and notes every attempt in the call record.
func (cc *Controlled) announce(ctx context.Context) {
	p := cc.phone
	log := p.Logger()
	t, err := target(p.Route())
	if err != nil {
		log.Warn().Err(err).Msg("webhook not available: no realtime.call.incoming sent")
		p.Note(call.Note{Kind: call.NoteWebhook, Text: webhook.TypeCallIncoming, Data: map[string]any{"error": err.Error()}})
		return
	}
	info := p.Info()
	ev := webhook.NewCallIncoming(time.Now(), webhook.CallIncoming{
		CallID: p.ID(), PhoneNumberID: p.Route().NumberID, From: info.From, To: info.To,
		SIPHeaders: sipHeaders(info.Headers),
	})
	res, err := cc.hooks.Deliver(ctx, t, ev)
	noteAttempts(p, ev, res)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Warn().Err(err).Str("event_id", ev.ID).Int("attempts", len(res.Attempts)).Msg("realtime.call.incoming not delivered")
	}
}

// sipHeaders are the headers the call kept at admission, as a webhook
// carries them.
func sipHeaders(hs []call.Header) []webhook.SIPHeader {
	out := make([]webhook.SIPHeader, 0, len(hs))
	for _, h := range hs {
		out = append(out, webhook.SIPHeader{Name: h.Name, Value: h.Value})
	}
	return out
}

// noteAttempts keeps each delivery attempt in the call record.
func noteAttempts(p call.Phone, ev webhook.Event, res webhook.Result) {
	for i, a := range res.Attempts {
		d := map[string]any{"event_id": ev.ID, "attempt": i + 1, "status": a.Status, "latency_ms": float64(a.Latency.Microseconds()) / 1000}
		if a.Err != "" {
			d["error"] = a.Err
		}
		p.Note(call.Note{At: a.At, Kind: call.NoteWebhook, Text: ev.Type, Data: d})
	}
}

// lifecycle queues a lifecycle event to the call's webhook; the outcome
// goes into the call record.
func (cc *Controlled) lifecycle(ev webhook.Event) {
	t, err := target(cc.phone.Route())
	if err != nil {
		return
	}
	p := cc.phone
	if err := cc.hooks.DeliverAsync(t, ev, func(res webhook.Result, _ error) { noteAttempts(p, ev, res) }); err != nil {
		log := p.Logger()
		log.Warn().Err(err).Str("event_type", ev.Type).Msg("lifecycle webhook not queued")
	}
}

// ended sends realtime.call.ended; by is who ended the call from the
// conversation's point of view ("" lets the call's record decide).
func (cc *Controlled) ended(by string) {
	snap := cc.phone.Snapshot()
	if by == "" {
		switch snap.EndedBy {
		case call.EndedByCaller:
			by = webhook.EndedByCaller
		case call.EndedByCallee:
			by = webhook.EndedByCallee
		default:
			by = webhook.EndedBySystem
		}
	}
	var dur int64
	if !snap.Answered.IsZero() {
		dur = time.Since(snap.Answered).Milliseconds()
	}
	reason := snap.EndReason
	if reason == "" {
		reason = "call ended"
	}
	cc.lifecycle(webhook.NewCallEnded(time.Now(), webhook.CallEnded{CallID: cc.phone.ID(), PhoneNumberID: cc.phone.Route().NumberID,
		Reason: reason, EndedBy: by, DurationMS: dur}))
}

// Update reports a step of a transfer that places a leg (or a REFER of
// the transfer endpoint) to the controller, as switchboard.call.transfer,
// and to the webhook, as realtime.call.transfer (transfer.Reporter).
func (cc *Controlled) Update(u xfer.Update) {
	d := map[string]any{"transfer_id": u.TransferID, "mode": string(u.Mode), "target_uri": u.TargetURI, "status": string(u.Status),
		"sip_status": u.SIPStatus}
	if u.Reason != "" {
		d["reason"] = u.Reason
	}
	cc.notify(cc.custom(EventCallTransfer, d))
	cc.lifecycle(webhook.NewCallTransfer(u.At, webhook.CallTransfer{CallID: cc.phone.ID(), TransferID: u.TransferID, Mode: string(u.Mode),
		TargetURI: u.TargetURI, Status: string(u.Status), SIPStatus: u.SIPStatus, Reason: u.Reason}))
}

// transferred reports a transfer's progress to the controller and, but
// for the intermediate progress, to the webhook.
func (cc *Controlled) transferred(targetURI, status string, code int) {
	cc.TransferUpdate(targetURI, status, code)
	if status != transferProgress {
		cc.lifecycle(webhook.NewCallTransfer(time.Now(), webhook.CallTransfer{CallID: cc.phone.ID(), TargetURI: targetURI, Status: status, SIPStatus: code}))
	}
}

// A ringing webhook-routed call is answered by the first of: a
// controller attaching (/v1/realtime?call_id=), or accept with the session
// configuration (POST /v1/realtime/calls/{call_id}/accept, the hosted
// API's SIP flow); or refused by reject with a SIP status (…/reject).
// Once one of them happened the others are ErrCallAnswered; a sideband
// controller may still attach to an accepted call.

// ErrCallAnswered means a ringing call was already answered (accepted, or
// a controller attached) or rejected.
var ErrCallAnswered = errors.New("conversation: the call is already answered or rejected")

// errRejected is why a call a controller rejected ended.
var errRejected = errors.New("rejected by the controller")

// Accept answers the ringing call with the session configuration cfg,
// merged over the call's defaults (the caller checked it: model, voice,
// formats): the model session opens with it and the call is answered, no
// controller socket needed. The audio formats stay the call's own.
func (cc *Controlled) Accept(cfg realtime.SessionConfig) error {
	if err := cc.decide(0); err != nil {
		return err
	}
	cc.b.mergeConfig(cfg)
	cc.attachOne.Do(func() { close(cc.attached) })
	cc.log.Info().Msg("call accepted")
	return nil
}

// Reject refuses the ringing call with the SIP status (a final error
// status, 400 to 699), sent to the caller with its reason phrase.
func (cc *Controlled) Reject(status int) error {
	if err := cc.decide(status); err != nil {
		return err
	}
	cc.setEnd(webhook.EndedByController, "")
	cc.attachOne.Do(func() { close(cc.attached) })
	cc.log.Info().Int("sip_status", status).Msg("call rejected")
	return nil
}

// decide marks the ringing call answered (status 0) or rejected with
// status: ErrCallOver once it ended, ErrCallAnswered once it was
// answered or rejected, or when it no longer rings.
func (cc *Controlled) decide(status int) error {
	st := cc.phone.Snapshot().State
	cc.mu.Lock()
	defer cc.mu.Unlock()
	switch {
	case cc.closed || cc.endReason != "" || st == call.StateEnded:
		return ErrCallOver
	case cc.decided || st != call.StateRinging:
		return ErrCallAnswered
	}
	cc.decided, cc.rejectStatus = true, status
	return nil
}

// rejected is Prepare's answer to a rejected call: the SIP status the
// controller chose.
func (cc *Controlled) rejected() error {
	cc.mu.Lock()
	status := cc.rejectStatus
	cc.mu.Unlock()
	if status == 0 {
		return nil
	}
	return &call.RejectError{Status: status, Reason: sip.ReasonPhrase(status), Err: errRejected}
}

// Accept answers a ringing webhook-routed call with cfg (see
// Controlled.Accept); ErrNotControlled for any other call.
func (r *Routed) Accept(cfg realtime.SessionConfig) error {
	if r.cc == nil || r.cc.opts.direct {
		return ErrNotControlled
	}
	return r.cc.Accept(cfg)
}

// Reject refuses a ringing webhook-routed call with the SIP status (see
// Controlled.Reject); ErrNotControlled for any other call.
func (r *Routed) Reject(status int) error {
	if r.cc == nil || r.cc.opts.direct {
		return ErrNotControlled
	}
	return r.cc.Reject(status)
}
