package conversation

import (
	"context"
	"errors"
	"strings"
	"time"

	"switchboard/call"
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
		SIPHeaders: webhook.CollectSIPHeaders(webhook.IncomingHeaderNames(), func(name string) []string {
			var out []string
			for _, h := range info.Headers {
				if strings.EqualFold(h.Name, name) {
					out = append(out, h.Value)
				}
			}
			return out
		}),
	})
	res, err := cc.hooks.Deliver(ctx, t, ev)
	noteAttempts(p, ev, res)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Warn().Err(err).Str("event_id", ev.ID).Int("attempts", len(res.Attempts)).Msg("realtime.call.incoming not delivered")
	}
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

// transferred reports a transfer's progress to the controller and, but
// for the intermediate progress, to the webhook.
func (cc *Controlled) transferred(targetURI, status string, code int) {
	cc.TransferUpdate(targetURI, status, code)
	if status != transferProgress {
		cc.lifecycle(webhook.NewCallTransfer(time.Now(), webhook.CallTransfer{CallID: cc.phone.ID(), TargetURI: targetURI, Status: status, SIPStatus: code}))
	}
}
