package numbers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"switchboard/store"
)

// Errors of the lookups the SIP and webhook layers make.
var (
	// ErrUnknownNumber means no number has the called E.164.
	ErrUnknownNumber = errors.New("unknown phone number")
	// ErrNoWebhook means the number routes to no webhook.
	ErrNoWebhook = errors.New("phone number has no webhook")
)

// Resolved is what the SIP layer needs to admit and route a call to a
// number. AuthPassword is the decrypted digest password: never log it.
type Resolved struct {
	NumberID string
	TeamID   string
	E164     string
	Name     string
	AgentID  string // set when the number routes to an agent
	// DTMFInband is the number's in-band DTMF setting ("" follows the agent).
	DTMFInband string
	// Recording asks for the number's calls to be recorded.
	Recording bool
	// SRTP is the number's SRTP policy ("" follows rtp.srtp).
	SRTP string
	// Codecs is the number's codec preference, best first.
	Codecs    []string
	WebhookID string // set when the number routes to a webhook
	// AllowedPrefixes are the source ranges allowed to send INVITEs;
	// empty: any source.
	AllowedPrefixes []netip.Prefix
	// AuthUsername and AuthPassword are the digest credentials; empty:
	// no digest challenge.
	AuthUsername string
	AuthPassword string
	// Webhook is the number's webhook with its secrets when it routes to
	// one (read with the number: an INVITE reads the store once).
	Webhook *WebhookDetails
	// ContextURL is asked for the call's context while it rings ("" for
	// none), for at most ContextTimeout.
	ContextURL     string
	ContextTimeout time.Duration
	// Stream is the number's stream with its secrets when it routes to a
	// bot's media stream.
	Stream *StreamDetails
}

// String describes r without its password.
func (r *Resolved) String() string {
	return fmt.Sprintf("%s %s agent=%q webhook=%q stream=%t prefixes=%v digest=%t", r.NumberID, r.E164, r.AgentID, r.WebhookID,
		r.Stream != nil, r.AllowedPrefixes, r.AuthUsername != "")
}

// Resolve finds the number e164 (any common formatting) for an inbound
// call. An unknown number is ErrUnknownNumber.
func (s *Service) Resolve(ctx context.Context, e164 string) (*Resolved, error) {
	canon, ok := NormalizeE164(e164)
	if !ok {
		return nil, fmt.Errorf("resolve %q: %w", e164, ErrUnknownNumber)
	}
	n, w, err := s.st.Numbers().Route(ctx, canon)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("resolve %s: %w", canon, ErrUnknownNumber)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", canon, err)
	}
	res := &Resolved{NumberID: n.ID, TeamID: n.TeamID, E164: n.PhoneNumber, Name: n.Name, AgentID: n.AgentID, DTMFInband: n.DTMFInband, Recording: n.Recording, SRTP: n.SRTP, Codecs: n.Codecs,
		WebhookID: n.WebhookID, AuthUsername: n.AuthUsername, ContextURL: n.ContextURL, ContextTimeout: contextTimeout(n)}
	for _, a := range n.AllowedAddresses {
		p, ok := parsePrefix(a)
		if !ok {
			return nil, fmt.Errorf("resolve %s: stored address %q is not a prefix", canon, a)
		}
		res.AllowedPrefixes = append(res.AllowedPrefixes, p)
	}
	if res.AuthPassword, err = s.open(n.AuthPasswordEnc, passwordAAD(n.ID)); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", canon, err)
	}
	if w != nil && n.WebhookID != "" {
		if res.Webhook, err = s.webhookDetails(n.ID, w); err != nil {
			return nil, fmt.Errorf("resolve %s: %w", canon, err)
		}
	}
	if res.Stream, err = s.streamDetails(n.ID, n.Stream); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", canon, err)
	}
	return res, nil
}

// WebhookDetails is a number's webhook with its decrypted secrets, for
// the delivery of realtime.call.incoming events. Never log it.
type WebhookDetails struct {
	WebhookID     string
	NumberID      string
	Name          string
	URL           string
	AuthURL       string
	AuthToken     string // bearer or OAuth client credential; empty: none
	SigningSecret string // whsec_…, the Standard Webhooks secret
}

// Webhook returns the webhook of number numberID with its secrets. A
// number without a webhook is ErrNoWebhook; an unknown one
// ErrUnknownNumber.
func (s *Service) Webhook(ctx context.Context, numberID string) (*WebhookDetails, error) {
	if _, err := s.st.Numbers().Get(ctx, numberID); errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("webhook of %s: %w", numberID, ErrUnknownNumber)
	} else if err != nil {
		return nil, fmt.Errorf("webhook of %s: %w", numberID, err)
	}
	w, err := s.st.Numbers().Webhook(ctx, numberID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("webhook of %s: %w", numberID, ErrNoWebhook)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook of %s: %w", numberID, err)
	}
	d, err := s.webhookDetails(numberID, w)
	if err != nil {
		return nil, fmt.Errorf("webhook of %s: %w", numberID, err)
	}
	return d, nil
}

// webhookDetails opens the sealed secrets of number numberID's webhook w.
func (s *Service) webhookDetails(numberID string, w *store.Webhook) (*WebhookDetails, error) {
	d := &WebhookDetails{WebhookID: w.ID, NumberID: numberID, Name: w.Name, URL: w.URL, AuthURL: w.AuthURL}
	var err error
	if d.SigningSecret, err = s.open(w.SigningSecretEnc, secretAAD(w.ID)); err != nil {
		return nil, err
	}
	if d.AuthToken, err = s.open(w.AuthTokenEnc, tokenAAD(w.ID)); err != nil {
		return nil, err
	}
	return d, nil
}

// WebhookSecret returns the decrypted signing secret of number numberID's
// webhook.
func (s *Service) WebhookSecret(ctx context.Context, numberID string) (string, error) {
	d, err := s.Webhook(ctx, numberID)
	if err != nil {
		return "", err
	}
	return d.SigningSecret, nil
}
