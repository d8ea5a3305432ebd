package numbers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/store"
)

// createBody is the body of POST /v2/phone-numbers. A null field is the
// same as an absent one.
type createBody struct {
	Origin      *string          `json:"origin"`
	Name        *string          `json:"name"`
	AgentID     *string          `json:"agent_id"`
	AreaCode    *string          `json:"area_code"`
	PhoneNumber *string          `json:"phone_number"`
	SIPAuth     *sipAuthBody     `json:"sip_auth"`
	Webhook     *webhookBody     `json:"webhook"`
	Stream      *streamBody      `json:"stream"`
	DTMFInband  *string          `json:"dtmf_inband"`
	Recording   *agent.Recording `json:"recording"`
	SRTP        *string          `json:"srtp"`
	Codecs      []string         `json:"codecs"`
	Outbound    *outboundBody    `json:"outbound_trunk"`
	// ContextURL and ContextTimeoutMS: see context.go.
	ContextURL       *string `json:"context_url"`
	ContextTimeoutMS *int    `json:"context_timeout_ms"`
	// Registration makes the appliance register the number at a
	// registrar (registration.go).
	Registration *registrationBody `json:"registration"`
}

// patchBody is the body of PATCH /v2/phone-numbers/{id}: the fields
// present change; null removes agent_id, webhook, stream, sip_auth,
// outbound_trunk or registration (and inside
// sip_auth, the digest credentials or the address list).
type patchBody struct {
	Origin       *string           `json:"origin"`
	Name         *string           `json:"name"`
	AgentID      *string           `json:"agent_id"`
	PhoneNumber  *string           `json:"phone_number"`
	SIPAuth      *sipAuthBody      `json:"sip_auth"`
	Webhook      *webhookBody      `json:"webhook"`
	Stream       *streamBody       `json:"stream"`
	DTMFInband   *string           `json:"dtmf_inband"`
	Recording    *agent.Recording  `json:"recording"`
	SRTP         *string           `json:"srtp"`
	Codecs       []string          `json:"codecs"`
	Outbound     *outboundBody     `json:"outbound_trunk"`
	Registration *registrationBody `json:"registration"`
	// ContextURL and ContextTimeoutMS: see context.go.
	ContextURL       *string `json:"context_url"`
	ContextTimeoutMS *int    `json:"context_timeout_ms"`
}

type sipAuthBody struct {
	AuthUsername     *string  `json:"auth_username"`
	AuthPassword     *string  `json:"auth_password"`
	AllowedAddresses []string `json:"allowed_addresses"`
}

type webhookBody struct {
	Name      *string `json:"name"`
	URL       *string `json:"url"`
	AuthURL   *string `json:"auth_url"`
	AuthToken *string `json:"auth_token"`
}

// fields tells which keys of a JSON object were present, for PATCH
// bodies where absent and null differ.
type fields map[string]json.RawMessage

func (f fields) has(k string) bool { _, ok := f[k]; return ok }

func (f fields) null(k string) bool {
	v, ok := f[k]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

func (f fields) sub(k string) fields {
	var m fields
	_ = json.Unmarshal(f[k], &m) // already decoded strictly; a non-object leaves m empty
	return m
}

// decodePatch decodes a PATCH body strictly (through httpx.Decode, for the
// shared error model) and records which fields it holds.
func decodePatch(r *http.Request) (*patchBody, fields, error) {
	var raw json.RawMessage
	if err := httpx.Decode(r, httpx.MaxBody, &raw); err != nil {
		return nil, nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	var b patchBody
	if err := httpx.Decode(r, httpx.MaxBody, &b); err != nil {
		return nil, nil, err
	}
	var f fields
	if err := json.Unmarshal(raw, &f); err != nil || f == nil {
		return nil, nil, httpx.BadRequest("", "the body must be a JSON object")
	}
	return &b, f, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

// applySIPAuth writes the sip_auth fields that has reports into n and
// returns the new digest password when the credentials change ("" clears
// them). Username and password change together.
func applySIPAuth(n *store.PhoneNumber, b *sipAuthBody, has func(string) bool) (*string, error) {
	var password *string
	uHas, pHas := has("auth_username"), has("auth_password")
	switch {
	case uHas && !pHas:
		return nil, httpx.BadRequest("sip_auth.auth_password", "auth_username and auth_password must be given together")
	case pHas && !uHas:
		return nil, httpx.BadRequest("sip_auth.auth_username", "auth_username and auth_password must be given together")
	case uHas && pHas:
		u, p := deref(b.AuthUsername), ""
		if b.AuthPassword != nil {
			p = *b.AuthPassword // passwords keep their spaces
		}
		switch {
		case u == "" && p == "":
			n.AuthUsername = ""
			password = &p
		case u == "":
			return nil, httpx.BadRequest("sip_auth.auth_username", "auth_username and auth_password must be given together")
		case p == "":
			return nil, httpx.BadRequest("sip_auth.auth_password", "auth_username and auth_password must be given together")
		default:
			if err := checkUsername(u); err != nil {
				return nil, err
			}
			if err := checkPassword(p); err != nil {
				return nil, err
			}
			n.AuthUsername = u
			password = &p
		}
	}
	if has("allowed_addresses") {
		list, err := checkCIDRs(b.AllowedAddresses)
		if err != nil {
			return nil, err
		}
		n.AllowedAddresses = list
	}
	return password, nil
}

// applyWebhook writes the webhook fields that has reports into w, checks
// the result, and returns the new auth_token when it changes ("" clears
// it). The name defaults to the number's name.
func applyWebhook(w *store.Webhook, b *webhookBody, has func(string) bool, numberName string) (*string, error) {
	var token *string
	if has("name") {
		w.Name = ""
		if v := deref(b.Name); v != "" {
			name, err := checkName("webhook.name", v)
			if err != nil {
				return nil, err
			}
			w.Name = name
		}
	}
	if w.Name == "" {
		w.Name = numberName
	}
	if has("url") {
		w.URL = deref(b.URL)
	}
	if has("auth_url") {
		w.AuthURL = deref(b.AuthURL)
	}
	if has("auth_token") {
		t := deref(b.AuthToken)
		if err := checkAuthToken(t); err != nil {
			return nil, err
		}
		token = &t
	}
	if w.URL == "" {
		return nil, httpx.BadRequest("webhook.url", "webhook.url is required")
	}
	if err := checkURL("webhook.url", w.URL); err != nil {
		return nil, err
	}
	if w.AuthURL != "" {
		if err := checkURL("webhook.auth_url", w.AuthURL); err != nil {
			return nil, err
		}
		hasToken := w.AuthTokenEnc != ""
		if token != nil {
			hasToken = *token != ""
		}
		if !hasToken {
			return nil, httpx.BadRequest("webhook.auth_token", "webhook.auth_url needs webhook.auth_token (the OAuth client credential)")
		}
	}
	return token, nil
}

// present reports a field of a create body as present when it is not
// null.
func present(m map[string]bool) func(string) bool { return func(k string) bool { return m[k] } }
