package numbers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchboard/agent"
	"switchboard/store"
)

// Record is the API form of a phone number. It never holds a secret.
type Record struct {
	PhoneNumberID  string       `json:"phone_number_id"`
	TeamID         string       `json:"team_id"`
	PhoneNumber    string       `json:"phone_number"`
	Name           string       `json:"name"`
	AgentID        string       `json:"agent_id"`
	AgentName      string       `json:"agent_name"`
	WebhookID      string       `json:"webhook_id"`
	Origin         string       `json:"origin"`
	SIPHost        string       `json:"sip_host"`
	InboundTrunkID string       `json:"inbound_trunk_id"`
	SIPAuth        SIPAuth      `json:"sip_auth"`
	Webhook        *WebhookInfo `json:"webhook,omitempty"`
	// Stream is the bot's media stream the number routes to.
	Stream *StreamInfo `json:"stream,omitempty"`
	// DTMFInband is "" (follow the agent), auto, on or off.
	DTMFInband string `json:"dtmf_inband,omitempty"`
	// Recording says whether the number's calls are recorded.
	Recording agent.Recording `json:"recording"`
	// SRTP is "" (the appliance's rtp.srtp), off, optional or required.
	SRTP string `json:"srtp,omitempty"`
	// Codecs is the codec preference, best first; absent: the best codec
	// both sides have (G.722, then the caller's G.711).
	Codecs []string `json:"codecs,omitempty"`
	// Outbound is where the number's outbound calls go; null: none.
	Outbound *OutboundTrunk `json:"outbound_trunk"`
	// ContextURL is asked for an agent-routed call's context while it
	// rings (absent: none), for at most ContextTimeoutMS.
	ContextURL       string `json:"context_url,omitempty"`
	ContextTimeoutMS int    `json:"context_timeout_ms,omitempty"`
	// Registration is the number's outbound registration and its state;
	// null: none.
	Registration *Registration `json:"registration"`
	CreatedAt    string        `json:"created_at"`
	UpdatedAt    string        `json:"updated_at"`
}

// SIPAuth is how the appliance authenticates a number's INVITEs. The
// password is never shown.
type SIPAuth struct {
	AuthUsername     string   `json:"auth_username,omitempty"`
	AllowedAddresses []string `json:"allowed_addresses"`
}

// WebhookInfo describes a number's webhook, without its secrets.
type WebhookInfo struct {
	WebhookID string `json:"webhook_id"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	AuthURL   string `json:"auth_url,omitempty"`
}

// CreatedWebhook is returned once, by the request that creates a webhook.
type CreatedWebhook struct {
	WebhookID             string `json:"webhook_id"`
	DispatchSigningSecret string `json:"dispatch_signing_secret"`
}

// Response is the body of POST and PATCH.
type Response struct {
	PhoneNumber *Record         `json:"phone_number"`
	Webhook     *CreatedWebhook `json:"webhook,omitempty"`
	// Stream is set by the request that gives the number its stream.
	Stream *CreatedStream `json:"stream,omitempty"`
}

// ListResponse is the body of GET /v2/phone-numbers.
type ListResponse struct {
	PhoneNumbers  []*Record `json:"phone_numbers"`
	NextPageToken string    `json:"next_page_token,omitempty"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// view renders n with its webhook and its agent's name, read through st
// (which may be a transaction). names caches agent names across a page.
func (s *Service) view(ctx context.Context, st store.Store, n *store.PhoneNumber, names map[string]string) (*Record, error) {
	rec := &Record{
		PhoneNumberID: n.ID, TeamID: n.TeamID, PhoneNumber: n.PhoneNumber, Name: n.Name, AgentID: n.AgentID,
		WebhookID: n.WebhookID, Origin: n.Origin, SIPHost: s.sipHost, InboundTrunkID: n.InboundTrunkID, DTMFInband: n.DTMFInband, Recording: agent.Recording{Enabled: n.Recording}, SRTP: n.SRTP, Codecs: n.Codecs,
		SIPAuth:    SIPAuth{AuthUsername: n.AuthUsername, AllowedAddresses: n.AllowedAddresses},
		Outbound:   outboundView(n),
		Stream:     streamView(n.Stream),
		ContextURL: n.ContextURL,
		CreatedAt:  rfc3339(n.CreateTime), UpdatedAt: rfc3339(n.UpdateTime),
	}
	if n.ContextURL != "" {
		rec.ContextTimeoutMS = int(contextTimeout(n) / time.Millisecond)
	}
	var err error
	if rec.Registration, err = registrationView(ctx, st, n.ID); err != nil {
		return nil, err
	}
	if rec.SIPAuth.AllowedAddresses == nil {
		rec.SIPAuth.AllowedAddresses = []string{}
	}
	if n.AgentID != "" {
		name, ok := names[n.AgentID]
		if !ok {
			a, err := st.Agents().Get(ctx, n.AgentID)
			switch {
			case err == nil:
				name = a.Name
			case !errors.Is(err, store.ErrNotFound):
				return nil, fmt.Errorf("read agent of %s: %w", n.ID, err)
			}
			if names != nil {
				names[n.AgentID] = name
			}
		}
		rec.AgentName = name
	}
	if n.WebhookID != "" {
		w, err := st.Numbers().Webhook(ctx, n.ID)
		switch {
		case err == nil:
			rec.Webhook = &WebhookInfo{WebhookID: w.ID, Name: w.Name, URL: w.URL, AuthURL: w.AuthURL}
		case !errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("read webhook of %s: %w", n.ID, err)
		}
	}
	return rec, nil
}
