package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
)

// Router picks each call's conversation from the route admission
// resolved (call.Router): an agent's bridge (or the loopback line test),
// or a controlled conversation for a webhook-routed number or a direct
// session (a browser's own session, steered over its event channel). Every call it
// routes is in its Registry until the conversation closes.
type Router struct {
	rt    *Runtime
	hooks Webhooks
	reg   *Registry
	opts  ControlledOptions
}

var _ call.Router = (*Router)(nil)

// NewRouter returns the router of rt's conversations. Controlled calls
// use opts.Engine (default: "upstream" when configured, else "echo") and
// deliver their webhooks through hooks.
func NewRouter(rt *Runtime, hooks Webhooks, reg *Registry, opts ControlledOptions) (*Router, error) {
	if rt == nil || hooks == nil || reg == nil {
		return nil, errors.New("conversation: a router needs a runtime, webhooks and a registry")
	}
	if opts.Engine == "" {
		opts.Engine = agent.EngineEcho
		if _, ok := rt.opts.Engines[agent.EngineUpstream]; ok {
			opts.Engine = agent.EngineUpstream
		}
	}
	if _, ok := rt.opts.Engines[opts.Engine]; !ok {
		return nil, fmt.Errorf("conversation: engine %s is not configured", opts.Engine)
	}
	return &Router{rt: rt, hooks: hooks, reg: reg, opts: opts}, nil
}

// Conversation returns the conversation of the call on p.
func (r *Router) Conversation(ctx context.Context, p call.Phone) (call.Conversation, error) {
	route := p.Route()
	switch {
	case route.AgentID != "" || (route.ContextURL != "" && route.WebhookID == "" && route.Session == nil):
		conv, b, err := r.rt.agentConversation(ctx, p)
		if err != nil {
			return nil, err
		}
		return r.reg.track(p, conv, nil, b), nil
	case route.WebhookID != "":
		cc := r.rt.Controlled(p, r.hooks, r.opts)
		return r.reg.track(p, cc, cc, nil), nil
	case route.Stream != nil:
		st, err := r.rt.Stream(p, *route.Stream, media.Format{})
		if err != nil {
			return nil, err
		}
		return r.reg.track(p, st, nil, nil), nil
	case route.Session != nil:
		var cfg realtime.SessionConfig
		if err := json.Unmarshal(route.Session, &cfg); err != nil {
			return nil, &call.RejectError{Status: 400, Reason: "Bad Request", Err: fmt.Errorf("session configuration: %w", err)}
		}
		opts := r.opts
		opts.direct = true
		cc := r.rt.Controlled(p, r.hooks, opts)
		cc.b.mergeConfig(cfg)
		return r.reg.track(p, cc, cc, nil), nil
	}
	return nil, &call.RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errors.New("the number routes nowhere")}
}
