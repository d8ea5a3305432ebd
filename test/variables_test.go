package test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

// greeted waits for the greeting the appliance gives the model after the
// answer: the assistant's item when the appliance says it itself, else a
// response.create quoting it. It returns its text.
func greeted(t *testing.T, c *realtimetest.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			t.Fatal("no greeting after the answer")
		case <-time.After(20 * time.Millisecond):
		}
		for _, ev := range c.Received() {
			switch v := ev.(type) {
			case *realtime.ConversationItemCreate:
				if v.Item.Role == realtime.RoleAssistant && len(v.Item.Content) > 0 {
					return v.Item.Content[0].Text
				}
			case *realtime.ResponseCreate:
				if v.Response != nil && v.Response.Instructions != "" {
					return v.Response.Instructions
				}
			}
		}
	}
}

// TestAgentVariablesFromSIPHeaders: sipp sends X-Account-Id and
// User-to-User to an agent whose instructions and greeting name them and
// the call's facts; the model session gets them rendered (a variable the
// call lacks renders empty), a custom tool gets the variables, the record
// keeps them with the missing one, and the API's hangup reason reaches
// sipp in the BYE's Reason.
func TestAgentVariablesFromSIPHeaders(t *testing.T) {
	t.Parallel()
	const number = "+14155550173"
	e := newHeadersEnv(t, nil)
	tools := newSignedReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		_, _ = w.Write([]byte(`{"balance":"12.50"}`))
	})
	ag := e.agent(t, map[string]any{
		"instructions": "Account {{sip.X-Account-Id}}, UUI {{ sip.user-to-user }}, caller {{caller.number}} ({{caller.name}}), " +
			"called {{called.number}}, plan [{{variables.plan}}].",
		"greeting": "Hello {{caller.name}}, about account {{sip.X-Account-Id}}.",
		"tools":    []map[string]any{{"name": "balance", "url": tools.srv.URL + "/balance", "description": "Read the balance."}},
	})
	e.number(t, number, map[string]any{"agent_id": ag})
	run := callWithHeaders(t, e.d, number, headersCaller{CallerName: "Alice Example", Mode: "wait_bye",
		Headers:   []string{"X-Account-Id: 42", "User-to-User: 56a390f3d2b7310023a2;encoding=hex", "X-Unused: x"},
		ByeReason: `^ *Q\.850;cause=16;text=.Normal call clearing.$`})
	conn := e.accept(t)
	require.Equal(t, "Account 42, UUI 56a390f3d2b7310023a2;encoding=hex, caller +15550001111 (Alice Example), called "+number+", plan [].",
		instructions(t, conn))
	require.Contains(t, greeted(t, conn), "Hello Alice Example, about account 42.")

	c := callTo(t, e.d, number)
	callID, err := conn.FunctionCall("balance", `{"currency":"EUR"}`)
	require.NoError(t, err)
	out, err := conn.AwaitFunctionOutput(ctxFor(t, 10*time.Second), callID)
	require.NoError(t, err)
	require.JSONEq(t, `{"balance":"12.50"}`, out)
	reqs := tools.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, c.ID(), reqs[0]["phone_call_id"])
	vars := reqs[0]["variables"].(map[string]any)
	require.Equal(t, "42", vars["sip.X-Account-Id"])
	require.Equal(t, "Alice Example", vars["caller.name"])
	require.Equal(t, number, vars["called.number"])

	// A reason that is not RFC 3326 nor a sentence is refused, naming the
	// field; a good one goes into the BYE.
	status, _, raw := e.d.Do(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", e.d.OwnerKey, map[string]any{"reason": "Q.850;cause=999"})
	require.Equal(t, http.StatusBadRequest, status, "%s", raw)
	require.Contains(t, string(raw), `"param":"reason"`)
	e.d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", e.d.OwnerKey, map[string]any{"reason": `Q.850;cause=16;text="Normal call clearing"`}, 200)
	run.wait(t, 15*time.Second)

	rec := waitRecord(t, e.d, c.ID(), 5*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	require.Contains(t, rec["end_reason"], "Normal call clearing")
	ctxRec := rec["context"].(map[string]any)
	require.Equal(t, ag, ctxRec["agent_id"])
	require.Equal(t, []any{"variables.plan"}, ctxRec["missing"])
	rv := ctxRec["variables"].(map[string]any)
	require.Equal(t, "42", rv["sip.X-Account-Id"])
	require.Equal(t, "56a390f3d2b7310023a2;encoding=hex", rv["sip.User-to-User"])
	require.Equal(t, "x", rv["sip.X-Unused"])
	require.Equal(t, "+15550001111", rv["caller.number"])
	require.NotContains(t, ctxRec, "context_url", "the number has none")
}

// TestAgentContextURL: a number's context_url is POSTed the call's facts
// (signed with the tools secret) while the caller hears ringing. An
// answer sets the variables, instructions, greeting and agent of the
// call; one that hangs or answers garbage leaves the agent's defaults,
// the call is answered within the ring budget, and the record says why.
func TestAgentContextURL(t *testing.T) {
	t.Parallel()
	// Answers that come are waited for generously, so a loaded machine
	// does not turn them into timeouts; the number asked by the test of
	// one that never comes has a short timeout.
	const patient, hasty = "+14155550174", "+14155550178"
	e := newHeadersEnv(t, nil)
	other := e.agent(t, map[string]any{"instructions": "The other agent."})
	ctxSrv := newSignedReceiver(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		data, _ := body["data"].(map[string]any)
		switch sipHeaderValue(data["sip_headers"], "X-Mode") {
		case "answer":
			_ = json.NewEncoder(w).Encode(map[string]any{
				"variables":    map[string]any{"plan": "gold", "visits": 3},
				"instructions": "From the CRM: plan {{variables.plan}}, {{variables.visits}} visits, account {{sip.X-Account-Id}}.",
				"greeting":     "Welcome back, {{variables.plan}} member.",
				"agent_id":     other,
			})
		case "hang":
			<-r.Context().Done()
		case "garbage":
			_, _ = w.Write([]byte("<html>Service temporarily unavailable</html>"))
		case "foreign":
			_ = json.NewEncoder(w).Encode(map[string]any{"agent_id": "ag_nobody", "instructions": "never used"})
		}
	})
	ag := e.agent(t, map[string]any{"instructions": "Default for {{sip.X-Account-Id}}, plan [{{variables.plan}}].", "greeting": "Hi."})
	e.number(t, patient, map[string]any{"agent_id": ag, "context_url": ctxSrv.srv.URL + "/context", "context_timeout_ms": 5000})
	e.number(t, hasty, map[string]any{"agent_id": ag, "context_url": ctxSrv.srv.URL + "/context", "context_timeout_ms": 400})

	for _, tc := range []struct {
		mode, number                  string
		timeout                       float64 // ms
		instructions, greeting, agent string
		applied                       []any
		err                           string
	}{
		{"answer", patient, 5000, "From the CRM: plan gold, 3 visits, account 42.", "Welcome back, gold member.", other,
			[]any{"variables", "instructions", "greeting", "agent_id"}, ""},
		{"hang", hasty, 400, "Default for 42, plan [].", "Hi.", ag, []any{}, "did not answer within 400ms"},
		{"garbage", patient, 5000, "Default for 42, plan [].", "Hi.", ag, []any{}, "not a context object"},
		{"foreign", patient, 5000, "Default for 42, plan [].", "Hi.", ag, []any{}, "not an agent of the number's team"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			number := tc.number
			before := len(ctxSrv.requests())
			run := callWithHeaders(t, e.d, number, headersCaller{CallerName: "Bob", Mode: "bye", PauseMs: 1500,
				Headers: []string{"X-Account-Id: 42", "X-Mode: " + tc.mode}})
			conn := e.accept(t)
			require.Equal(t, tc.instructions, instructions(t, conn))
			require.Contains(t, greeted(t, conn), tc.greeting)
			c := callTo(t, e.d, number)
			run.wait(t, 15*time.Second)

			reqs := ctxSrv.requests()
			require.Len(t, reqs, before+1, "one request, not retried")
			ev := reqs[before]
			require.Equal(t, "realtime.call.context", ev["type"])
			data := ev["data"].(map[string]any)
			require.Equal(t, c.ID(), data["call_id"])
			require.Equal(t, "Bob", data["caller_name"])
			require.Equal(t, ag, data["agent_id"])
			require.Equal(t, "42", sipHeaderValue(data["sip_headers"], "X-Account-Id"))

			rec := waitRecord(t, e.d, c.ID(), 5*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
			ctxRec := rec["context"].(map[string]any)
			require.Equal(t, tc.agent, ctxRec["agent_id"])
			fetch := ctxRec["context_url"].(map[string]any)
			require.Equal(t, tc.applied, fetch["applied"])
			if tc.err == "" {
				require.NotContains(t, fetch, "error")
				require.Equal(t, "gold", ctxRec["variables"].(map[string]any)["variables.plan"])
				require.Equal(t, []any{}, ctxRec["missing"])
			} else {
				require.Contains(t, fetch["error"], tc.err)
				require.Equal(t, []any{"variables.plan"}, ctxRec["missing"])
			}
			// The wait for the context stays within its timeout (plus a
			// loaded machine's scheduling), and the call is answered within
			// the ring budget: that timeout, then the session's answer_timeout.
			invited, err := time.Parse(time.RFC3339Nano, rec["invited_at"].(string))
			require.NoError(t, err)
			answered, err := time.Parse(time.RFC3339Nano, rec["answered_at"].(string))
			require.NoError(t, err)
			t.Logf("%s: context_url %.1f ms, INVITE to answer %s", tc.mode, fetch["latency_ms"], answered.Sub(invited))
			require.Less(t, fetch["latency_ms"].(float64), tc.timeout+1000)
			require.Less(t, answered.Sub(invited), time.Duration(tc.timeout)*time.Millisecond+5*time.Second)
			if tc.mode == "hang" {
				require.GreaterOrEqual(t, fetch["latency_ms"].(float64), 390.0)
			}
		})
	}
}
