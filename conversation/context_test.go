package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/webhook"
)

// ctxPhone is a call with a route and leg info of its own.
type ctxPhone struct {
	notePhone
	route call.Route
	info  call.LegInfo
}

func (p *ctxPhone) Route() call.Route  { return p.route }
func (p *ctxPhone) Info() call.LegInfo { return p.info }

type fakeAgents map[string]*agent.Config

func (f fakeAgents) Load(_ context.Context, id string) (*agent.Config, error) {
	if c, ok := f[id]; ok {
		return c, nil
	}
	return nil, agent.ErrUnknownAgent
}

// fakeContexts answers every context request with ans or err.
type fakeContexts struct {
	ans   *webhook.ContextAnswer
	err   error
	asked int
	got   webhook.CallContext
}

func (f *fakeContexts) Context(_ context.Context, _ string, data webhook.CallContext) (*webhook.ContextAnswer, error) {
	f.asked++
	f.got = data
	return f.ans, f.err
}

func strp(s string) *string { return &s }

// TestResolveContext: an answer is used whole or not at all; one that
// names another team's agent, bad variables or text over the limits
// leaves the defaults with the reason; a placed call is not asked.
func TestResolveContext(t *testing.T) {
	agents := fakeAgents{
		"ag_1":     {ID: "ag_1", TeamID: "t1", Settings: agent.Settings{Instructions: "Default {{variables.plan}}.", Engine: agent.EngineEcho}},
		"ag_2":     {ID: "ag_2", TeamID: "t1", Settings: agent.Settings{Instructions: "Two.", Engine: agent.EngineEcho}},
		"ag_other": {ID: "ag_other", TeamID: "t2", Settings: agent.Settings{Instructions: "Other team."}},
	}
	phone := func(dir string) *ctxPhone {
		return &ctxPhone{route: call.Route{NumberID: "pn_1", TeamID: "t1", AgentID: "ag_1", ContextURL: "https://crm.example/ctx",
			ContextTimeout: time.Second}, info: call.LegInfo{From: "+14155550123", To: "+18005550100", CallerName: "Alice",
			Direction: dir, Headers: []call.Header{{Name: "X-Account-Id", Value: "42"}, {Name: "Diversion", Value: "<sip:a>"}, {Name: "diversion", Value: "<sip:b>"}}}}
	}
	for _, tc := range []struct {
		name    string
		ans     *webhook.ContextAnswer
		err     error
		agentID string
		applied []string
		errText string
	}{
		{"applied", &webhook.ContextAnswer{Variables: json.RawMessage(`{"plan":"gold"}`), Instructions: strp("Ctx {{variables.plan}} {{sip.x-account-id}}."), AgentID: strp("ag_2")},
			nil, "ag_2", []string{"variables", "instructions", "agent_id"}, ""},
		{"other team", &webhook.ContextAnswer{Variables: json.RawMessage(`{"plan":"gold"}`), AgentID: strp("ag_other")}, nil, "ag_1", []string{}, "not an agent of the number's team"},
		{"bad variables", &webhook.ContextAnswer{Variables: json.RawMessage(`{"plan":{"x":1}}`), Instructions: strp("never")}, nil, "ag_1", []string{}, "variables.plan"},
		{"long greeting", &webhook.ContextAnswer{Greeting: strp(strings.Repeat("a", agent.MaxGreetingLen+1))}, nil, "ag_1", []string{}, "greeting longer"},
		{"bad placeholder", &webhook.ContextAnswer{Instructions: strp("{{plan}}")}, nil, "ag_1", []string{}, "is not a variable"},
		{"refused", nil, &webhook.ContextError{Status: 500, Body: "boom"}, "ag_1", []string{}, "answered 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeContexts{ans: tc.ans, err: tc.err}
			rt := NewRuntime(agents, RuntimeOptions{Contexts: src, Engines: nil})
			p := phone("")
			conv, _, err := rt.agentConversation(context.Background(), p)
			require.NoError(t, err)
			defer conv.Close()
			require.Equal(t, 1, src.asked)
			require.Equal(t, "Alice", src.got.CallerName)
			require.Len(t, p.notes, 1)
			cx := p.notes[0].Data.(*call.Context)
			require.Equal(t, tc.agentID, cx.AgentID)
			require.Equal(t, tc.applied, cx.ContextURL.Applied)
			require.Equal(t, "<sip:a>, <sip:b>", cx.Variables["sip.Diversion"], "a header given twice is one variable")
			if tc.errText == "" {
				require.Empty(t, cx.ContextURL.Error)
				require.Equal(t, "gold", cx.Variables["variables.plan"])
				require.Equal(t, "Ctx gold 42.", conv.(*bridge).cfg.Settings.Instructions)
				require.Equal(t, []string{}, cx.Missing)
			} else {
				require.Contains(t, cx.ContextURL.Error, tc.errText)
				require.NotContains(t, cx.Variables, "variables.plan", "nothing of a refused answer is used")
				require.Equal(t, "Default .", conv.(*bridge).cfg.Settings.Instructions)
				require.Equal(t, []string{"variables.plan"}, cx.Missing)
			}
			require.Equal(t, "Default {{variables.plan}}.", agents["ag_1"].Settings.Instructions, "the agent's record is not changed")
		})
	}

	t.Run("placed call", func(t *testing.T) {
		src := &fakeContexts{ans: &webhook.ContextAnswer{}}
		rt := NewRuntime(agents, RuntimeOptions{Contexts: src})
		p := phone(call.DirectionOutbound)
		p.route.Variables = map[string]string{"plan": "silver"}
		conv, _, err := rt.agentConversation(context.Background(), p)
		require.NoError(t, err)
		defer conv.Close()
		require.Zero(t, src.asked)
		cx := p.notes[0].Data.(*call.Context)
		require.Nil(t, cx.ContextURL)
		require.Equal(t, "Default silver.", conv.(*bridge).cfg.Settings.Instructions)
	})

	t.Run("no agent", func(t *testing.T) {
		rt := NewRuntime(agents, RuntimeOptions{Contexts: &fakeContexts{err: errors.New("unreachable")}})
		p := phone("")
		p.route.AgentID = ""
		_, _, err := rt.agentConversation(context.Background(), p)
		var re *call.RejectError
		require.True(t, errors.As(err, &re), "%v", err)
		require.Equal(t, 480, re.Status)
		require.Equal(t, "unreachable", p.notes[0].Data.(*call.Context).ContextURL.Error)
	})
}
