package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/realtime"
)

// secretRequest is the body of POST /v1/realtime/client_secrets.
type secretRequest struct {
	ExpiresAfter *struct {
		// Anchor is "created_at" (the only anchor) or absent.
		Anchor  string `json:"anchor,omitempty"`
		Seconds *int   `json:"seconds"`
	} `json:"expires_after"`
	Session json.RawMessage `json:"session"`
}

// secretResponse is the client secret resource, with the stored session
// when one was given (as the OpenAI API answers).
type secretResponse struct {
	Value     string          `json:"value"`
	ExpiresAt int64           `json:"expires_at"`
	Session   json.RawMessage `json:"session,omitempty"`
}

// createSecret is POST /v1/realtime/client_secrets: expires_after.seconds
// 1..3600 (default 600); session (object or null) is validated as a
// realtime session configuration and stored with the secret. A model it
// names must be allowed to the calling key.
func (s *Service) createSecret(w http.ResponseWriter, r *http.Request) error {
	var req secretRequest
	if r.ContentLength != 0 {
		if err := httpx.Decode(r, 0, &req); err != nil {
			return err
		}
	}
	ttl := auth.DefaultClientSecretTTL
	if ea := req.ExpiresAfter; ea != nil {
		if ea.Anchor != "" && ea.Anchor != "created_at" {
			return httpx.BadRequest("expires_after.anchor", "expires_after.anchor must be created_at")
		}
		if ea.Seconds != nil {
			if *ea.Seconds < 1 || *ea.Seconds > int(auth.MaxClientSecretTTL/time.Second) {
				return httpx.BadRequest("expires_after.seconds", "expires_after.seconds must be 1 to 3600")
			}
			ttl = time.Duration(*ea.Seconds) * time.Second
		}
	}
	var session json.RawMessage
	if raw := bytes.TrimSpace(req.Session); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return httpx.BadRequest("session", "session must be an object or null")
		}
		var cfg realtime.SessionConfig
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return sessionDecodeErr("session", raw, err)
		}
		if err := checkSession(&cfg); err != nil {
			return configErr(err)
		}
		// The model the secret will open (stored, or the default) must
		// be known and granted to the calling key; so must a reasoning
		// effort be possible with it.
		model := cfg.Model
		if model == "" {
			model = realtime.DefaultModel
		}
		var allows func(string) bool
		if p := httpx.PrincipalFrom(r.Context()); p != nil {
			allows = p.AllowsModel
		}
		if cfg.Model != "" || cfg.Reasoning != nil {
			if he := (policy{allows: allows}).check("session.model", model, cfg.Reasoning); he != nil {
				if he.Param == "reasoning.effort" {
					he.Param = "session.reasoning.effort"
				}
				return he
			}
		}
		// Stored and answered in one state: the voice and the turn
		// detection in both placements, whichever the request used.
		norm, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		session = norm
	}
	p := httpx.PrincipalFrom(r.Context())
	if p == nil {
		return errors.New("client secrets: no principal")
	}
	value, exp, err := s.opts.Secrets.Issue(r.Context(), p, ttl, session)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, secretResponse{Value: value, ExpiresAt: exp.Unix(), Session: session})
	return nil
}
