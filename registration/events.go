package registration

import (
	"context"
	"errors"
	"time"

	"switchboard/numbers"
	"switchboard/store"
	"switchboard/webhook"
)

// Event is the data of a phone_number.registration webhook: the number
// and its registration's new state.
type Event struct {
	PhoneNumberID string     `json:"phone_number_id"`
	PhoneNumber   string     `json:"phone_number"`
	Registration  EventState `json:"registration"`
}

// EventState is a registration's state as GET /v2/phone-numbers/{id}
// shows it.
type EventState struct {
	State      string  `json:"state"`
	ExpiresAt  *string `json:"expires_at"`
	LastStatus int     `json:"last_status"`
	LastError  string  `json:"last_error,omitempty"`
	NodeID     string  `json:"node_id,omitempty"`
}

// set records the line's state: in the store (where every node reads it),
// in the gauge, and, when the state or the failure's status changed, in
// one log line and a webhook to each of the binding's numbers that has
// one. A retry that fails as the one before is written nowhere.
func (l *line) set(ctx context.Context, state string, expires time.Time, status int, msg string) {
	next := store.RegistrationBinding{Key: l.b.Key, NodeID: l.m.opts.NodeID, State: state, Expires: expires,
		LastStatus: status, LastError: msg, UpdateTime: time.Now()}
	l.mu.Lock()
	prev := l.state
	l.state = next
	l.mu.Unlock()
	changed := prev.State != state || prev.LastStatus != status
	if !changed && state == store.RegistrationFailed && prev.LastError == msg {
		return
	}
	if err := l.m.opts.Store.SetState(ctx, &next); err != nil && ctx.Err() == nil {
		if errors.Is(err, store.ErrNotFound) {
			l.log.Debug().Msg("registration: the lease is another node's now; the next sync stops this line")
		} else {
			l.log.Warn().Err(err).Msg("registration: cannot store the state")
		}
	}
	l.m.opts.Metrics.moved(prev.State, state)
	if !changed {
		return
	}
	switch state {
	case store.RegistrationRegistered:
		l.log.Info().Int("status", status).Time("expires_at", expires).Msg("registration: registered")
	case store.RegistrationFailed:
		l.log.Warn().Int("status", status).Str("error", msg).Dur("retry_min", l.m.opts.RetryMin).
			Msg("registration: failed; retrying with backoff (further failures alike are not logged)")
	case store.RegistrationOff:
		l.log.Info().Msg("registration: unregistered")
		if prev.State == store.RegistrationRegistering {
			return // it never got anywhere: nothing to tell
		}
	default:
		return
	}
	l.announce(ctx, next)
}

// announce sends the new state to the webhook of each of the binding's
// numbers that routes to one.
func (l *line) announce(ctx context.Context, b store.RegistrationBinding) {
	if l.m.opts.Webhooks == nil {
		return
	}
	st := EventState{State: b.State, LastStatus: b.LastStatus, LastError: b.LastError, NodeID: b.NodeID}
	if !b.Expires.IsZero() {
		at := b.Expires.UTC().Format(time.RFC3339)
		st.ExpiresAt = &at
	}
	for i, id := range l.b.NumberIDs {
		w, err := l.m.opts.Numbers.Webhook(ctx, id)
		if errors.Is(err, numbers.ErrNoWebhook) || errors.Is(err, numbers.ErrUnknownNumber) {
			continue
		}
		if err != nil {
			l.log.Warn().Err(err).Str("phone_number_id", id).Msg("registration: cannot read the number's webhook")
			continue
		}
		t := webhook.Target{ID: w.WebhookID, URL: w.URL, SigningSecret: w.SigningSecret, AuthToken: w.AuthToken, AuthURL: w.AuthURL}
		ev := webhook.NewEvent(webhook.TypePhoneNumberRegistration, b.UpdateTime,
			Event{PhoneNumberID: id, PhoneNumber: l.b.Numbers[i], Registration: st})
		_ = l.m.opts.Webhooks.DeliverAsync(t, ev, nil) // a full queue is logged by the dispatcher
	}
}
