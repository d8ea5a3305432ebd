package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/sip"
	"switchboard/webhook"
)

// ContextSource asks a number's context_url for a call's context
// (webhook.ToolClient).
type ContextSource interface {
	Context(ctx context.Context, url string, data webhook.CallContext) (*webhook.ContextAnswer, error)
}

// callContext is what an agent-routed call runs with, resolved once while
// it rings: its agent, its variables, and the context_url's replacements
// of the agent's instructions and greeting.
type callContext struct {
	agentID string
	// cfg is the agent the context_url named (loaded and checked); nil:
	// the number's.
	cfg          *agent.Config
	vars         agent.Vars
	instructions *string
	greeting     *string
	fetch        *call.ContextFetch
}

// callVars are the variables of the call on p: its facts, the headers it
// kept at admission (a header given twice is one variable, its values
// joined by ", "), and its own (a placed call's).
func callVars(p call.Phone) agent.Vars {
	info := p.Info()
	v := agent.Vars{agent.VarCallerNumber: info.From, agent.VarCallerName: info.CallerName,
		agent.VarCalledNumber: info.To, agent.VarCallID: p.ID()}
	names := map[string]string{} // lower-case header name -> its variable
	for _, h := range info.Headers {
		l := strings.ToLower(h.Name)
		if k, ok := names[l]; ok {
			v[k] += ", " + h.Value
			continue
		}
		k := agent.VarSIP + h.Name
		names[l] = k
		v[k] = h.Value
	}
	for k, s := range p.Route().Variables {
		v[agent.VarOwn+k] = s
	}
	return v
}

// resolveContext builds the call's variables and, when its number has a
// context_url (and the appliance did not place the call), asks it while
// the caller hears ringing, for at most the number's context timeout. An
// answer is used whole or not at all: a request that fails, times out or
// answers something that does not check leaves the agent's defaults, and
// the call goes on.
func (r *Runtime) resolveContext(ctx context.Context, p call.Phone, log zerolog.Logger) callContext {
	route := p.Route()
	cx := callContext{agentID: route.AgentID, vars: callVars(p)}
	if route.ContextURL == "" || p.Info().Direction == call.DirectionOutbound {
		return cx
	}
	cx.fetch = &call.ContextFetch{Applied: []string{}}
	start := time.Now()
	ans, err := r.askContext(ctx, p, route)
	cx.fetch.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if err == nil {
		err = r.useAnswer(ctx, &cx, route, ans)
	}
	if err != nil {
		cx.fetch.Error = err.Error()
		log.Warn().Err(err).Float64("latency_ms", cx.fetch.LatencyMS).Msg("context_url not used: the agent's defaults apply")
	}
	return cx
}

// askContext POSTs the call's facts to its number's context_url.
func (r *Runtime) askContext(ctx context.Context, p call.Phone, route call.Route) (*webhook.ContextAnswer, error) {
	if r.opts.Contexts == nil {
		return nil, errors.New("context requests are not configured on this appliance")
	}
	timeout := route.ContextTimeout // numbers.Resolve fills in its default
	if timeout <= 0 {
		timeout = r.opts.AnswerTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info := p.Info()
	ans, err := r.opts.Contexts.Context(cctx, route.ContextURL, webhook.CallContext{CallID: p.ID(), PhoneNumberID: route.NumberID,
		From: info.From, To: info.To, CallerName: info.CallerName, AgentID: route.AgentID, SIPHeaders: sipHeaders(info.Headers)})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, fmt.Errorf("context_url did not answer within %s", timeout)
	}
	return ans, err
}

// useAnswer checks a context_url's answer and, when every part of it
// holds, applies it to cx.
func (r *Runtime) useAnswer(ctx context.Context, cx *callContext, route call.Route, ans *webhook.ContextAnswer) error {
	vars, err := agent.ParseVariables(ans.Variables)
	if err != nil {
		return fmt.Errorf("context_url answered bad variables: %w", err)
	}
	for _, f := range []struct {
		name string
		text *string
		max  int
	}{{"instructions", ans.Instructions, agent.MaxInstructionsLen}, {"greeting", ans.Greeting, agent.MaxGreetingLen}} {
		if f.text == nil {
			continue
		}
		if utf8.RuneCountInString(*f.text) > f.max {
			return fmt.Errorf("context_url answered %s longer than %d characters", f.name, f.max)
		}
		if err := agent.CheckTemplate(*f.text); err != nil {
			return fmt.Errorf("context_url answered %s: %w", f.name, err)
		}
	}
	var cfg *agent.Config
	if ans.AgentID != nil && strings.TrimSpace(*ans.AgentID) != "" {
		id := strings.TrimSpace(*ans.AgentID)
		cfg, err = r.agents.Load(ctx, id)
		if errors.Is(err, agent.ErrUnknownAgent) || (err == nil && cfg.TeamID != route.TeamID) {
			return fmt.Errorf("context_url answered agent_id %s, which is not an agent of the number's team", id)
		}
		if err != nil {
			return fmt.Errorf("context_url's agent_id %s: %w", id, err)
		}
	}
	applied := []string{}
	if len(vars) > 0 {
		for k, s := range vars {
			cx.vars[agent.VarOwn+k] = s
		}
		applied = append(applied, "variables")
	}
	if ans.Instructions != nil {
		cx.instructions = ans.Instructions
		applied = append(applied, "instructions")
	}
	if ans.Greeting != nil {
		cx.greeting = ans.Greeting
		applied = append(applied, "greeting")
	}
	if cfg != nil {
		cx.cfg, cx.agentID = cfg, cfg.ID
		applied = append(applied, "agent_id")
	}
	cx.fetch.Applied = applied
	return nil
}

// apply returns a copy of the agent cfg with the context's instructions
// and greeting, both rendered with the call's variables, and the names
// they used that the call does not define.
func (cx *callContext) apply(cfg *agent.Config) (*agent.Config, []string) {
	c := *cfg
	if cx.instructions != nil {
		c.Settings.Instructions = *cx.instructions
	}
	if cx.greeting != nil {
		c.Settings.Greeting = *cx.greeting
	}
	var missing, more []string
	c.Settings.Instructions, missing = cx.vars.Render(c.Settings.Instructions)
	c.Settings.Greeting, more = cx.vars.Render(c.Settings.Greeting)
	for _, m := range more {
		if !contains(missing, m) {
			missing = append(missing, m)
		}
	}
	if missing == nil {
		missing = []string{}
	}
	return &c, missing
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// agentConversation is the conversation of an agent-routed call (or of a
// number whose context_url names the agent): the context resolved, the
// agent loaded, its instructions and greeting rendered, and what the call
// runs with noted in its record.
func (r *Runtime) agentConversation(ctx context.Context, p call.Phone) (call.Conversation, *bridge, error) {
	log := p.Logger()
	cx := r.resolveContext(ctx, p, log)
	cfg := cx.cfg
	if cfg == nil {
		if cx.agentID == "" {
			r.noteContext(p, &cx, nil)
			return nil, nil, &call.RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errors.New("the number routes nowhere and its context_url named no agent")}
		}
		var err error
		if cfg, err = r.agents.Load(ctx, cx.agentID); err != nil {
			if errors.Is(err, agent.ErrUnknownAgent) {
				return nil, nil, &call.RejectError{Status: 404, Reason: "Not Found", Err: err}
			}
			return nil, nil, err
		}
	}
	cfg, missing := cx.apply(cfg)
	r.noteContext(p, &cx, missing)
	if cfg.Settings.Engine == agent.EngineLoopback {
		lb := NewLoopback(p, 0)
		lb.Record = cfg.Settings.Recording.On()
		return lb, nil, nil
	}
	b := newBridge(r, cfg, p, log.With().Str("agent_id", cfg.ID).Logger())
	b.setVars(cx.vars)
	return b, b, nil
}

// noteContext keeps what the call runs with in its record.
func (r *Runtime) noteContext(p call.Phone, cx *callContext, missing []string) {
	if missing == nil {
		missing = []string{}
	}
	p.Note(call.Note{Kind: call.NoteContext, Data: &call.Context{Variables: cx.vars, Missing: missing, AgentID: cx.agentID, ContextURL: cx.fetch}})
}

// targetHeaders are the REFER headers of transfer target t, their values
// rendered with the call's variables. A header whose rendered value is
// empty or no longer checks (too long) is left out.
func (b *bridge) targetHeaders(t agent.TransferTarget) []call.Header {
	if len(t.Headers) == 0 {
		return nil
	}
	m := make(map[string]string, len(t.Headers))
	for name, v := range t.Headers {
		out, _ := b.vars.Render(v)
		if strings.TrimSpace(out) == "" {
			continue
		}
		if _, err := sip.CheckHeaders(map[string]string{name: out}); err != nil {
			b.log.Warn().Err(err).Str("target", t.Name).Msg("transfer header left out")
			continue
		}
		m[name] = out
	}
	hs, err := sip.CheckHeaders(m)
	if err != nil {
		b.log.Warn().Err(err).Str("target", t.Name).Msg("transfer headers left out")
		return nil
	}
	out := make([]call.Header, len(hs))
	for i, h := range hs {
		out[i] = call.Header{Name: h.Name, Value: h.Value}
	}
	return out
}
