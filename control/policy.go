package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/jsonerr"
	"switchboard/realtime"
)

// policy is what one realtime session may use: the models its credential
// grants (an API key's ACL, or the ACL of the key that made a client
// secret, as it is now) and, for a client secret whose stored session
// names a model, that model only. ?model= and session.update may narrow
// within it, never widen it.
type policy struct {
	allows func(model string) bool
	// bound is the model a client secret's stored session names.
	bound string
}

// modelNames lists the known models for error messages.
func modelNames() string {
	var names []string
	for _, m := range realtime.Models() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// check refuses an unknown model (400), a model the credential does not
// grant or a secret is not bound to (403), and a reasoning effort on a
// model that does not reason (400). param names where the model came from.
func (p policy) check(param, model string, reasoning *realtime.Reasoning) *httpx.Error {
	m, ok := realtime.LookupModel(model)
	if !ok {
		return &httpx.Error{Status: http.StatusBadRequest, Code: "model_not_found", Param: param,
			Message: "unknown model " + strconvQuote(model) + "; the models are " + modelNames()}
	}
	if p.bound != "" && model != p.bound {
		return &httpx.Error{Status: http.StatusForbidden, Code: "permission_denied", Param: param,
			Message: "this client secret is bound to model " + p.bound + " (the model of its stored session)"}
	}
	if p.allows == nil || !p.allows(model) {
		return &httpx.Error{Status: http.StatusForbidden, Code: "permission_denied", Param: param,
			Message: "no permission for model " + model + " (the key needs api-key:model:" + model + " or api-key:model:*)"}
	}
	if reasoning != nil && !m.Reasoning {
		return httpx.BadRequest("reasoning.effort", "reasoning.effort is supported only with the models that reason (svc-voice-latest, svc-voice-think-fast-1.0), not %s", model)
	}
	return nil
}

func strconvQuote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// checkSession is what every session configuration a client sends
// must pass: realtime's checks (type, formats, turn detection, the two
// placements agreeing) and a voice this appliance speaks, checked as
// /v1/tts checks voice_id (agent.KnownVoice: the built-in voices,
// case-insensitive). It returns nil or a *realtime.ConfigError.
func checkSession(cfg *realtime.SessionConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return cfg.CheckVoice(agent.KnownVoice)
}

// configErr turns a *realtime.ConfigError into a 400 naming the member.
func configErr(err error) error {
	var ce *realtime.ConfigError
	if errors.As(err, &ce) {
		return httpx.BadRequest(ce.Param, "%s", ce.Message)
	}
	return httpx.BadRequest("session", "%v", err)
}

// sessionDecodeErr is a 400 for a session configuration (raw, the
// member at in its request) that does not decode: the member at fault
// as its path in the request and the type it takes (package jsonerr).
func sessionDecodeErr(at string, raw []byte, err error) error {
	je := jsonerr.Translate(raw, err)
	if je == nil {
		return httpx.BadRequest(at, "%s is not a realtime session configuration", at)
	}
	param, msg := joinParam(at, je.Path), je.Message
	if je.Path == "" {
		msg = strings.Replace(msg, "the value", at, 1)
	} else if at != "" {
		msg = at + "." + msg
	}
	return httpx.BadRequest(param, "%s", msg)
}

func joinParam(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// effective completes a checked configuration: the default model when
// none is named, and the default reasoning effort (high) for a model that
// reasons, so session.created reports what is in force.
func effective(cfg *realtime.SessionConfig) {
	if cfg.Model == "" {
		cfg.Model = realtime.DefaultModel
	}
	if m, ok := realtime.LookupModel(cfg.Model); ok && m.Reasoning && cfg.Reasoning == nil {
		cfg.Reasoning = &realtime.Reasoning{Effort: realtime.EffortHigh}
	}
}

// guard returns the check of a session's client events: a session.update
// must be a valid configuration, and a model or reasoning effort it names
// must pass the policy (starting from the session's model). It runs on
// the connection's reader goroutine only.
func (p policy) guard(model string) func(realtime.Event) *realtime.ErrorDetail {
	return func(e realtime.Event) *realtime.ErrorDetail {
		u, ok := e.(*realtime.SessionUpdate)
		if !ok {
			return nil
		}
		if err := checkSession(&u.Session); err != nil {
			var he *httpx.Error
			if errors.As(configErr(err), &he) {
				return &realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: "invalid_value", Param: he.Param, Message: he.Message}
			}
		}
		next := model
		if u.Session.Model != "" {
			next = u.Session.Model
		}
		if next == "" {
			return nil // a controller's call: the model is the call's own
		}
		if he := p.check("session.model", next, u.Session.Reasoning); he != nil {
			code := "invalid_value"
			if he.Status == http.StatusForbidden {
				code = "permission_denied"
			} else if he.Code == "model_not_found" {
				code = he.Code
			}
			param := he.Param
			if param == "reasoning.effort" {
				param = "session.reasoning.effort"
			}
			return &realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: code, Param: param, Message: he.Message}
		}
		model = next
		return nil
	}
}

type guardKey struct{}

func withGuard(ctx context.Context, g func(realtime.Event) *realtime.ErrorDetail) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// guardFrom is the HandlerOptions.Guard of the realtime handlers.
func guardFrom(r *http.Request) func(realtime.Event) *realtime.ErrorDetail {
	g, _ := r.Context().Value(guardKey{}).(func(realtime.Event) *realtime.ErrorDetail)
	return g
}

// usageOf returns the tokens a response.done reports (total_tokens, or
// input plus output), 0 for any other event.
func usageOf(e realtime.Event) int64 {
	d, ok := e.(*realtime.ResponseDone)
	if !ok || len(d.Response.Usage) == 0 {
		return 0
	}
	var u struct {
		Total  int64 `json:"total_tokens"`
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	}
	if json.Unmarshal(d.Response.Usage, &u) != nil {
		return 0
	}
	if u.Total > 0 {
		return u.Total
	}
	return u.Input + u.Output
}

// counter returns the observer that adds a session's tokens to keyID.
func (s *Service) counter(keyID string) func(realtime.Event) {
	if s.opts.Tokens == nil {
		return nil
	}
	return func(e realtime.Event) {
		if n := usageOf(e); n > 0 {
			s.opts.Tokens.Add(keyID, n, time.Now())
		}
	}
}

type observerKey struct{}

func withObserver(ctx context.Context, o func(realtime.Event)) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// observerFrom is the HandlerOptions.Observe of the realtime handlers.
func observerFrom(r *http.Request) func(realtime.Event) {
	o, _ := r.Context().Value(observerKey{}).(func(realtime.Event))
	return o
}
