package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"

	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/conversation"
	"switchboard/realtime"
)

// secretProtocol prefixes a client secret offered as a WebSocket
// subprotocol.
const secretProtocol = realtime.SecretProtocolPrefix

// credential returns the token of a /v1/realtime request: the bearer
// token, else a client secret offered as a subprotocol.
func credential(r *http.Request) (token string, viaProtocol bool) {
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), false
	}
	for _, p := range websocket.Subprotocols(r) {
		if v, ok := strings.CutPrefix(p, secretProtocol); ok {
			return v, true
		}
	}
	return "", false
}

var realtimeRoute = httpx.Route{Method: http.MethodGet, Pattern: "/v1/realtime", Endpoint: auth.EndpointRealtime, Access: httpx.APIKey}

// serveRealtime is GET /v1/realtime: the control socket of a call with
// call_id, else a session with the configured engine. Every refusal
// happens before the upgrade, with the JSON error body.
func (s *Service) serveRealtime(w http.ResponseWriter, r *http.Request) error {
	if !websocket.IsWebSocketUpgrade(r) {
		return httpx.BadRequest("", "GET /v1/realtime must be a WebSocket upgrade")
	}
	q := r.URL.Query()
	token, viaProtocol := credential(r)
	if id := q.Get("call_id"); id != "" {
		return s.serveControl(w, r, id, token, viaProtocol)
	}
	var (
		cfg   realtime.SessionConfig
		pol   policy
		keyID string
	)
	if auth.KindOf(token) == auth.TokenClientSecret {
		cs, err := s.opts.Secrets.Check(r.Context(), token)
		if err != nil {
			return err
		}
		if len(cs.Session) > 0 {
			if err := json.Unmarshal(cs.Session, &cfg); err != nil {
				return err
			}
		}
		pol, keyID = policy{allows: cs.AllowsModel, bound: cfg.Model}, cs.KeyID
		if m := q.Get("model"); m != "" {
			if cfg.Model != "" && m != cfg.Model {
				return &httpx.Error{Status: http.StatusForbidden, Code: "permission_denied", Param: "model",
					Message: "this client secret is bound to model " + cfg.Model + " (the model of its stored session)"}
			}
			cfg.Model = m
		}
	} else {
		if viaProtocol {
			return httpx.Unauthorized("the " + secretProtocol + " subprotocol carries client secrets only; send an API key as a bearer token")
		}
		p, err := s.opts.Keys.Authorize(r.Context(), token, realtimeRoute)
		if err != nil {
			return err
		}
		pol, keyID = policy{allows: p.AllowsModel}, p.KeyID
		cfg.Model = q.Get("model")
	}
	if e := q.Get("reasoning.effort"); e != "" {
		if e != realtime.EffortHigh && e != realtime.EffortNone {
			return httpx.BadRequest("reasoning.effort", "reasoning.effort must be high or none")
		}
		if cfg.Reasoning != nil && cfg.Reasoning.Effort != e {
			return &httpx.Error{Status: http.StatusForbidden, Code: "permission_denied", Param: "reasoning.effort",
				Message: "this client secret is bound to reasoning.effort " + cfg.Reasoning.Effort}
		}
		cfg.Reasoning = &realtime.Reasoning{Effort: e}
	}
	if cfg.Model == "" {
		cfg.Model = realtime.DefaultModel
	}
	if err := checkSession(&cfg); err != nil {
		return configErr(err)
	}
	if he := pol.check("model", cfg.Model, cfg.Reasoning); he != nil {
		return he
	}
	effective(&cfg)
	ctx := withObserver(withGuard(withConfig(r.Context(), cfg), pol.guard(cfg.Model)), s.counter(keyID))
	s.direct.ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// serveControl attaches a controller to a webhook-routed call.
func (s *Service) serveControl(w http.ResponseWriter, r *http.Request, id, token string, viaProtocol bool) error {
	if viaProtocol || auth.KindOf(token) == auth.TokenClientSecret {
		return httpx.Forbidden("a client secret cannot open a session with call_id; use an API key")
	}
	p, err := s.opts.Keys.Authorize(r.Context(), token, realtimeRoute)
	if err != nil {
		return err
	}
	if s.forwarded(w, r, id) {
		return nil
	}
	rc, ok := s.opts.Calls.Get(id)
	if !ok || rc.TeamID() != p.TeamID {
		return httpx.NotFound("no webhook-routed call %s is ringing or active", id)
	}
	sess, err := rc.Attach()
	switch {
	case errors.Is(err, conversation.ErrNotControlled):
		return httpx.NotFound("no webhook-routed call %s is ringing or active", id)
	case errors.Is(err, conversation.ErrControllerAttached):
		return httpx.Conflict("call_id", "another controller is attached to call %s", id)
	case errors.Is(err, conversation.ErrCallOver):
		return httpx.NotFound("call %s has ended", id)
	case errors.Is(err, call.ErrConversationEnded):
		return httpx.Conflict("call_id", "call %s was taken over: it has no conversation to steer any more", id)
	case err != nil:
		return err
	}
	defer sess.Close() // when the upgrade failed, Open never ran
	ctx := withGuard(context.WithValue(r.Context(), attachKey{}, sess), policy{allows: p.AllowsModel}.guard(""))
	ctx = withObserver(ctx, s.counter(p.KeyID))
	s.callWS.ServeHTTP(w, r.WithContext(ctx))
	return nil
}

type attachKey struct{}

type configKey struct{}

func withConfig(ctx context.Context, cfg realtime.SessionConfig) context.Context {
	return context.WithValue(ctx, configKey{}, cfg)
}

func configFrom(ctx context.Context) realtime.SessionConfig {
	cfg, _ := ctx.Value(configKey{}).(realtime.SessionConfig)
	return cfg
}

// attachEngine "opens" the controller session reserved for the request.
type attachEngine struct{}

var errNoReservation = errors.New("control: no controller reservation on the request")

func (attachEngine) Open(ctx context.Context, _ realtime.SessionConfig) (realtime.Session, error) {
	sess, ok := ctx.Value(attachKey{}).(*conversation.ControllerSession)
	if !ok {
		return nil, errNoReservation
	}
	sess.Start()
	return sess, nil
}
