package control

import (
	"context"
	"errors"
	"strings"
	"time"

	"switchboard/call"
	"switchboard/webhook"
)

// announce POSTs realtime.call.incoming to the number's webhook within
// the ring window (ctx) and notes every attempt in the call record.
func (s *Service) announce(ctx context.Context, c *call.Call, e *entry) {
	log := c.Logger()
	t, err := s.target(ctx, e)
	if err != nil {
		log.Warn().Err(err).Msg("webhook not available: no realtime.call.incoming sent")
		c.Note(call.Note{Kind: call.NoteWebhook, Text: webhook.TypeCallIncoming, Data: map[string]any{"error": err.Error()}})
		return
	}
	in := c.SIP()
	hdrs := in.Headers()
	ev := webhook.NewCallIncoming(time.Now(), webhook.CallIncoming{
		CallID: c.ID(), PhoneNumberID: e.numberID, From: in.From(), To: in.To(),
		SIPHeaders: webhook.CollectSIPHeaders(webhook.IncomingHeaderNames(), func(name string) []string {
			var out []string
			for _, h := range hdrs {
				if strings.EqualFold(h.Name, name) {
					out = append(out, h.Value)
				}
			}
			return out
		}),
	})
	res, err := s.opts.Webhooks.Deliver(ctx, t, ev)
	noteAttempts(c, ev, res)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Warn().Err(err).Str("event_id", ev.ID).Int("attempts", len(res.Attempts)).Msg("realtime.call.incoming not delivered")
	}
}

// noteAttempts keeps each delivery attempt in the call record.
func noteAttempts(c *call.Call, ev webhook.Event, res webhook.Result) {
	for i, a := range res.Attempts {
		d := map[string]any{"event_id": ev.ID, "attempt": i + 1, "status": a.Status, "latency_ms": float64(a.Latency.Microseconds()) / 1000}
		if a.Err != "" {
			d["error"] = a.Err
		}
		c.Note(call.Note{At: a.At, Kind: call.NoteWebhook, Text: ev.Type, Data: d})
	}
}

// target loads (once) the webhook of the call's number.
func (s *Service) target(ctx context.Context, e *entry) (webhook.Target, error) {
	if t := e.getTarget(); t != nil {
		return *t, nil
	}
	wd, err := s.opts.Numbers.Webhook(ctx, e.numberID)
	if err != nil {
		return webhook.Target{}, err
	}
	t := webhook.Target{ID: wd.WebhookID, URL: wd.URL, SigningSecret: wd.SigningSecret, AuthToken: wd.AuthToken, AuthURL: wd.AuthURL}
	e.setTarget(t)
	return t, nil
}

// lifecycle queues a lifecycle event to the call's webhook; the outcome
// goes into the call record.
func (s *Service) lifecycle(c *call.Call, e *entry, ev webhook.Event) {
	t, err := s.target(context.Background(), e)
	if err != nil {
		return
	}
	err = s.opts.Webhooks.DeliverAsync(t, ev, func(res webhook.Result, _ error) { noteAttempts(c, ev, res) })
	if err != nil {
		log := c.Logger()
		log.Warn().Err(err).Str("event_type", ev.Type).Msg("lifecycle webhook not queued")
	}
}

// ended runs when a webhook-routed call's conversation closes: the call
// leaves the registry and realtime.call.ended goes out.
func (s *Service) ended(c *call.Call, e *entry, by string) {
	s.mu.Lock()
	delete(s.calls, c.ID())
	s.mu.Unlock()
	snap := c.Snapshot()
	if by == "" {
		switch snap.EndedBy {
		case call.EndedByCaller:
			by = webhook.EndedByCaller
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
	s.lifecycle(c, e, webhook.NewCallEnded(time.Now(), webhook.CallEnded{CallID: c.ID(), PhoneNumberID: e.numberID,
		Reason: reason, EndedBy: by, DurationMS: dur}))
}
