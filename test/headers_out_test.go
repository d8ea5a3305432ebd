package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
)

// requireBadParam sends body and requires a 400 naming param.
func requireBadParam(t *testing.T, d *apptest.Daemon, path string, body any, param string) {
	t.Helper()
	status, _, raw := d.Do(t, "POST", path, d.OwnerKey, body)
	require.Equal(t, http.StatusBadRequest, status, "%s", raw)
	_, p, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, param, p, "%s", raw)
}

// TestPlacedCallHeaders: POST /v1/calls carries headers into the INVITE
// (sipp, the callee, checks each with a regexp) and variables into the
// agent's instructions; the refer endpoint carries headers into the REFER
// (checked by sipp too). Headers that would break the dialog, or values
// with a line break, are refused with a 400 naming headers.<Name>.
func TestPlacedCallHeaders(t *testing.T) {
	t.Parallel()
	const from = "+14155550175"
	port, callee := startHeadersCallee(t, headersCallee{
		InviteChecks: checks("X-Account-Id", `^ *42$`, "User-to-User", `^ *56a390f3d2b7310023a2;encoding=hex$`,
			"X-Campaign", `^ *spring sale$`, "From", `sip:\+14155550175@`),
		Refer:       true,
		ReferChecks: checks("X-Transfer-Reason", `^ *escalation$`, "Refer-To", `sip:sales@127\.0\.0\.1`),
		ByeReason:   "transferred",
	})
	e := newHeadersEnv(t, nil)
	dumpOnFail(t, e.d, callee)
	ag := e.agent(t, map[string]any{"instructions": "You call {{called.number}} about the {{variables.plan}} plan ({{variables.visits}} visits)."})
	e.number(t, from, map[string]any{"agent_id": ag, "outbound_trunk": map[string]any{"uri": fmt.Sprintf("sip:127.0.0.1:%d", port)}})

	good := map[string]any{"to": "+14155550199", "from": from,
		"headers":   map[string]any{"X-Account-Id": "42", "User-to-User": "56a390f3d2b7310023a2;encoding=hex", "X-Campaign": "spring sale"},
		"variables": map[string]any{"plan": "gold", "visits": 3}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	requireBadParam(t, e.d, "/v1/calls", with("headers", map[string]any{"Via": "SIP/2.0/UDP evil"}), "headers.Via")
	requireBadParam(t, e.d, "/v1/calls", with("headers", map[string]any{"X-Foo": "a\r\nContact: <sip:evil@x>"}), "headers.X-Foo")
	requireBadParam(t, e.d, "/v1/calls", with("headers", map[string]any{"X-Foo": strings.Repeat("a", 1025)}), "headers.X-Foo")
	requireBadParam(t, e.d, "/v1/calls", with("headers", map[string]any{"X Foo": "a"}), "headers.X Foo")
	requireBadParam(t, e.d, "/v1/calls", with("headers", map[string]any{"X-Foo": 42}), "headers.X-Foo")
	many := map[string]any{}
	for i := 0; i < 21; i++ {
		many[fmt.Sprintf("X-H%d", i)] = "v"
	}
	requireBadParam(t, e.d, "/v1/calls", with("headers", many), "headers")
	requireBadParam(t, e.d, "/v1/calls", with("variables", map[string]any{"plan": map[string]any{"tier": 1}}), "variables.plan")
	require.Equal(t, 0, e.d.App.Calls().Active(), "nothing was placed")

	rec := e.d.JSON(t, "POST", "/v1/calls", e.d.OwnerKey, good, 201)
	id := rec["call_id"].(string)
	conn := e.accept(t)
	require.Equal(t, "You call +14155550199 about the gold plan (3 visits).", instructions(t, conn))
	var c *call.Call
	require.Eventually(t, func() bool {
		var ok bool
		c, ok = e.d.App.Calls().Get(id)
		return ok && c.Snapshot().State == call.StateActive
	}, 10*time.Second, 10*time.Millisecond, "the callee never answered")

	refer := "/v1/realtime/calls/" + id + "/refer"
	requireBadParam(t, e.d, refer, map[string]any{"target_uri": "sip:sales@127.0.0.1", "headers": map[string]any{"Contact": "<sip:x@y>"}}, "headers.Contact")
	requireBadParam(t, e.d, refer, map[string]any{"target_uri": "sip:sales@127.0.0.1", "headers": map[string]any{"CSeq": "1 REFER"}}, "headers.CSeq")
	requireBadParam(t, e.d, refer, map[string]any{"target_uri": "sip:sales@127.0.0.1", "headers": map[string]any{"X-Nul": "a\x00b"}}, "headers.X-Nul")
	e.d.JSON(t, "POST", refer, e.d.OwnerKey, map[string]any{"target_uri": "sip:sales@127.0.0.1", "headers": map[string]any{"X-Transfer-Reason": "escalation"}}, 200)
	callee.wait(t, 20*time.Second)

	ended := waitRecord(t, e.d, id, 5*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	vars := ended["context"].(map[string]any)["variables"].(map[string]any)
	require.Equal(t, "gold", vars["variables.plan"])
	require.Equal(t, "3", vars["variables.visits"])
}

// TestTransferToolHeaders: an agent's transfer target names headers whose
// values are the call's variables; when the model calls transfer_call,
// the REFER carries them rendered (sipp, the caller, checks them), and a
// target header that would break the dialog is refused when the agent is
// saved.
func TestTransferToolHeaders(t *testing.T) {
	t.Parallel()
	const number = "+14155550176"
	e := newHeadersEnv(t, nil)
	status, _, raw := e.d.Do(t, "POST", "/v1/agents", e.d.OwnerKey, map[string]any{"name": "bad", "transfer_targets": []map[string]any{
		{"name": "sales", "uri": "sip:sales@127.0.0.1", "headers": map[string]any{"Call-ID": "x"}}}})
	require.Equal(t, http.StatusBadRequest, status, "%s", raw)
	_, param, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "transfer_targets[0].headers.Call-ID", param)
	status, _, raw = e.d.Do(t, "POST", "/v1/agents", e.d.OwnerKey, map[string]any{"name": "bad", "transfer_targets": []map[string]any{
		{"name": "sales", "uri": "sip:sales@127.0.0.1", "headers": map[string]any{"X-A": "{{nope}}"}}}})
	require.Equal(t, http.StatusBadRequest, status, "%s", raw)
	_, param, _ = apptest.ErrorOf(t, raw)
	require.Equal(t, "transfer_targets[0].headers.X-A", param)

	ag := e.agent(t, map[string]any{"transfer_announcement": "", "transfer_targets": []map[string]any{{
		"name": "sales", "uri": "sip:sales@127.0.0.1",
		"headers": map[string]any{"X-Account-Id": "{{sip.X-Account-Id}}", "User-to-User": "{{sip.User-to-User}}", "X-From-Agent": "acct {{sip.X-Account-Id}}"},
	}}})
	e.number(t, number, map[string]any{"agent_id": ag})
	run := callWithHeaders(t, e.d, number, headersCaller{CallerName: "Carol", Mode: "refer",
		Headers: []string{"X-Account-Id: 42", "User-to-User: 56a390f3d2b7310023a2;encoding=hex"},
		ReferChecks: checks("X-Account-Id", `^ *42$`, "User-to-User", `^ *56a390f3d2b7310023a2;encoding=hex$`,
			"X-From-Agent", `^ *acct 42$`, "Refer-To", `sip:sales@127\.0\.0\.1`),
		ByeReason: "transferred"})
	conn := e.accept(t)
	instructions(t, conn)
	callTo(t, e.d, number)
	_, err := conn.FunctionCall("transfer_call", `{"target":"sales"}`)
	require.NoError(t, err)
	run.wait(t, 20*time.Second)
}

// TestControlledHangupReason: the hangup endpoint's reason reaches the
// caller in the BYE's Reason of a webhook-routed call too (its controller
// ends the call), and the record says so.
func TestControlledHangupReason(t *testing.T) {
	t.Parallel()
	const number = "+14155550177"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s"}, h, number)
	run := startSipp(t, d, number, sippControl{ByeReason: `Q\.850;cause=17;text=.User busy.`}, 1, 1)
	in := h.next(t, "realtime.call.incoming", 5*time.Second)
	id := in.Data["call_id"].(string)
	c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	c.next(t, "session.created", 2*time.Second)
	c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)
	requireBadParam(t, d, "/v1/realtime/calls/"+id+"/hangup", map[string]any{"reason": "line one\nline two"}, "reason")
	requireBadParam(t, d, "/v1/realtime/calls/"+id+"/hangup", map[string]any{"reason": 16}, "reason")
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, map[string]any{"reason": `Q.850;cause=17;text="User busy"`}, 200)
	run.wait(t, 10*time.Second)
	rec := waitRecord(t, d, id, 5*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	require.Contains(t, rec["end_reason"], "User busy")
	var found bool
	for _, ev := range recordEvents(rec, "event") {
		if ev["text"] == "hung up by the API" {
			found = true
			require.Equal(t, `Q.850;cause=17;text="User busy"`, ev["data"].(map[string]any)["reason"])
		}
	}
	require.True(t, found, "the hangup is in the record's events: %v", rec["events"])
}
