package conversation_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestAgentEndCall: the model says goodbye and calls end_call; the
// appliance answers the function, lets the goodbye play to its end, then
// sends BYE with the reason, and asks for no further response.
func TestAgentEndCall(t *testing.T) {
	t.Parallel()
	e := startUpstream(t, realtimetest.Options{}, nil)
	c, conn := e.callNoGreeting(t, nil)
	ctx := ctxFor(t, 10*time.Second)
	start := time.Now()
	_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: time.Second, Transcript: "Goodbye!"})
	require.NoError(t, err)
	callID, err := conn.FunctionCall("end_call", `{"reason":"the caller is done"}`)
	require.NoError(t, err)
	out, err := conn.AwaitFunctionOutput(ctx, callID)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, out)
	reason := c.waitEnded(5 * time.Second)
	require.Contains(t, reason, "agent ended the call: the caller is done")
	bye, _ := c.event("bye_received")
	heard := c.heardMs(start, bye.Time)
	t.Logf("goodbye heard: %d ms before BYE", heard)
	require.InDelta(t, 1000, heard, 40, "BYE only after the goodbye played")
	for _, ev := range conn.Received() {
		require.NotEqual(t, realtime.TypeResponseCreate, ev.EventType(), "no response asked after end_call")
	}
}

// TestAgentTransferCall: transfer_call to a configured target sends REFER
// after the model's sentence; an accepted transfer ends the call; a failed
// one keeps it and tells the model; an unknown target is an error object.
func TestAgentTransferCall(t *testing.T) {
	t.Parallel()
	e := startUpstream(t, realtimetest.Options{}, nil)
	// No transfer announcement here (TestAgentTransferAnnouncement has one):
	// the REFER follows the model's sentence at once.
	targets := map[string]any{"transfer_announcement": "", "transfer_targets": []map[string]any{
		{"name": "sales", "uri": "sip:sales@127.0.0.1"}, {"name": "billing", "uri": "tel:+14155550123"}}}

	t.Run("accepted", func(t *testing.T) {
		c, conn := e.callNoGreeting(t, targets)
		ctx := ctxFor(t, 10*time.Second)
		start := time.Now()
		_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 600 * time.Millisecond, Transcript: "Connecting you to sales."})
		require.NoError(t, err)
		_, err = conn.FunctionCall("transfer_call", `{"target":"sales"}`)
		require.NoError(t, err)
		reason := c.waitEnded(5 * time.Second)
		require.Contains(t, reason, "transferred")
		require.Equal(t, []string{"sip:sales@127.0.0.1"}, c.referred())
		refer, ok := c.event("refer_received")
		require.True(t, ok)
		require.InDelta(t, 600, c.heardMs(start, refer.Time), 40, "REFER only after the sentence played")
	})

	t.Run("declined and unknown", func(t *testing.T) {
		number := e.agentNumber(targets)
		c, err := dial(t, e.d, number, callOptions{ReferStatus: 486})
		require.NoError(t, err)
		ctx := ctxFor(t, 10*time.Second)
		conn, err := e.up.Accept(ctx)
		require.NoError(t, err)

		callID, err := conn.FunctionCall("transfer_call", `{"target":"nowhere"}`)
		require.NoError(t, err)
		out, err := conn.AwaitFunctionOutput(ctx, callID)
		require.NoError(t, err)
		require.Contains(t, out, "unknown transfer target nowhere")
		_, err = conn.Expect(ctx, realtime.TypeResponseCreate)
		require.NoError(t, err)

		callID, err = conn.FunctionCall("transfer_call", `{"target":"billing"}`)
		require.NoError(t, err)
		out, err = conn.AwaitFunctionOutput(ctx, callID)
		require.NoError(t, err)
		require.Contains(t, out, "the transfer failed")
		require.Equal(t, []string{"tel:+14155550123"}, c.referred())
		_, err = conn.Expect(ctx, realtime.TypeResponseCreate)
		require.NoError(t, err)
		// The call goes on.
		at := time.Now()
		_, err = conn.StreamResponse(ctx, realtimetest.Response{Audio: 300 * time.Millisecond})
		require.NoError(t, err)
		c.waitHeard(at, 2*time.Second)
		require.NoError(t, c.call.Context().Err(), "the call ended after a failed transfer")
	})
}

// TestAgentCustomTool: a custom tool's result goes back to the model as the
// function output, followed by response.create, and the call goes on. When
// the appliance has no tool caller wired (app does not set
// RuntimeOptions.Tools yet), the model gets an error object instead and
// the tool server is never called.
func TestAgentCustomTool(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	var gotBody atomic.Value
	tools := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		gotBody.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"shipped"}`)
	}))
	t.Cleanup(tools.Close)
	e := startUpstream(t, realtimetest.Options{}, nil)
	c, conn := e.callNoGreeting(t, map[string]any{"tools": []map[string]any{{"name": "lookup_order", "url": tools.URL + "/orders", "timeout_ms": 2000,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"order": map[string]any{"type": "string"}}}}}})
	ctx := ctxFor(t, 10*time.Second)
	callID, err := conn.FunctionCall("lookup_order", `{"order":"42"}`)
	require.NoError(t, err)
	out, err := conn.AwaitFunctionOutput(ctx, callID)
	require.NoError(t, err)
	if hits.Load() > 0 {
		t.Logf("tool server called with %v; output %s", gotBody.Load(), out)
		require.Contains(t, gotBody.Load(), "42")
		require.Contains(t, out, "shipped")
	} else {
		t.Logf("no tool caller wired in the appliance: the model got %s", out)
		var obj struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &obj), "output is not an error object: %s", out)
		require.NotEmpty(t, obj.Error.Message)
	}
	_, err = conn.Expect(ctx, realtime.TypeResponseCreate)
	require.NoError(t, err)
	at := time.Now()
	_, err = conn.StreamResponse(ctx, realtimetest.Response{Audio: 300 * time.Millisecond})
	require.NoError(t, err)
	c.waitHeard(at, 2*time.Second)
	require.NoError(t, c.call.Context().Err(), "the call goes on")
}

// TestAgentErrorEventKeepsSession: an error event from the provider is
// logged and the conversation goes on in the same session.
func TestAgentErrorEventKeepsSession(t *testing.T) {
	t.Parallel()
	e := startUpstream(t, realtimetest.Options{}, nil)
	c, conn := e.callNoGreeting(t, nil)
	ctx := ctxFor(t, 10*time.Second)
	require.NoError(t, conn.SendError("invalid_value", "something was wrong", "evt_x"))
	require.NoError(t, conn.SendRaw([]byte(`{"type":"error","event_id":"e2","error":{"type":"server_error","code":"overloaded","message":"try later"}}`)))
	at := time.Now()
	_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 400 * time.Millisecond})
	require.NoError(t, err)
	c.waitHeard(at, 2*time.Second)
	c.waitSilence(at, 5, 3*time.Second)
	require.InDelta(t, 400, c.heardMs(at, time.Now()), 40)
	select {
	case <-conn.Done():
		t.Fatal("the appliance closed the session after an error event")
	default:
	}
	require.NoError(t, c.call.Context().Err())
	require.Contains(t, e.d.Logs.String(), "something was wrong")
}

// TestAgentIdleCheckIn: after the assistant finished and the caller stayed
// silent for idle_timeout_ms, the appliance adds a user turn and asks for
// a response.
func TestAgentIdleCheckIn(t *testing.T) {
	t.Parallel()
	e := startUpstream(t, realtimetest.Options{}, nil)
	_, conn := e.callNoGreeting(t, map[string]any{"idle_timeout_ms": 1000})
	ctx := ctxFor(t, 10*time.Second)
	_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 200 * time.Millisecond, Transcript: "Anything else?"})
	require.NoError(t, err)
	done := time.Now()
	ev, err := conn.Expect(ctx, realtime.TypeConversationItemCreate)
	require.NoError(t, err)
	after := time.Since(done)
	it := ev.(*realtime.ConversationItemCreate).Item
	require.Equal(t, realtime.RoleUser, it.Role)
	require.Contains(t, it.Content[0].Text, "said nothing")
	_, err = conn.Expect(ctx, realtime.TypeResponseCreate)
	require.NoError(t, err)
	t.Logf("check-in %v after response.done", after)
	require.GreaterOrEqual(t, after, 950*time.Millisecond)
	require.Less(t, after, 2*time.Second)
}

// reseeded returns the texts of the conversation.item.create events conn
// received, "role: text".
func reseeded(conn *realtimetest.Conn) []string {
	var out []string
	for _, ev := range conn.Received() {
		if ic, ok := ev.(*realtime.ConversationItemCreate); ok && len(ic.Item.Content) > 0 {
			out = append(out, string(ic.Item.Role)+": "+strings.TrimSpace(ic.Item.Content[0].Text))
		}
	}
	return out
}
