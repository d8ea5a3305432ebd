package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLICallsTransferHoldResume: calls transfer, hold and resume post
// what their flags say to /v1/calls/{id}/…, print the transfer's id, and
// show the daemon's refusal with the field it names.
func TestCLICallsTransferHoldResume(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		mu.Lock()
		paths, bodies = append(paths, r.Method+" "+r.URL.Path), append(bodies, m)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/calls/bad/transfer":
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid_request_error","message":"mode must be refer, bridge, warm or auto","param":"mode"}}`))
		case r.URL.Path == "/v1/calls/c1/transfer":
			w.WriteHeader(202)
			_, _ = w.Write([]byte(`{"transfer_id":"tr_0123456789abcdef","call_id":"c1","mode":"warm","target_uri":"tel:+14155550100"}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"SWITCHBOARD_URL": srv.URL, "SWITCHBOARD_API_KEY": "sk_test"}
	getenv := func(k string) string { return env[k] }

	out, errs, code := runIn(t, getenv, "calls", "transfer", "c1", "tel:+14155550100", "-mode", "warm", "-briefing", "An invoice question.",
		"-accept", "answer", "-hold-audio", "silence", "-timeout", "25", "-header", "X-Case=4711", "-header", "X-Team=b")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "transfer tr_0123456789abcdef (warm) of call c1 to tel:+14155550100 started")
	_, _, code = runIn(t, getenv, "calls", "hold", "c1", "-audio", "music")
	require.Equal(t, 0, code)
	out, _, code = runIn(t, getenv, "calls", "resume", "c1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "call c1 is back with its agent")
	out, _, code = runIn(t, getenv, "calls", "transfer", "--json", "c1", "sip:desk@127.0.0.1")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"transfer_id": "tr_0123456789abcdef"`)

	mu.Lock()
	require.Equal(t, []string{"POST /v1/calls/c1/transfer", "POST /v1/calls/c1/hold", "POST /v1/calls/c1/resume", "POST /v1/calls/c1/transfer"}, paths)
	require.Equal(t, map[string]any{"target_uri": "tel:+14155550100", "mode": "warm", "briefing": "An invoice question.", "accept": "answer",
		"hold_audio": "silence", "timeout_s": 25.0, "headers": map[string]any{"X-Case": "4711", "X-Team": "b"}}, bodies[0])
	require.Equal(t, map[string]any{"audio": "music"}, bodies[1])
	require.Equal(t, map[string]any{"target_uri": "sip:desk@127.0.0.1"}, bodies[3], "only what was given")
	mu.Unlock()

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calls", "transfer", "bad", "sip:x@127.0.0.1", "-mode", "blind"}, "(param mode)"},
		{[]string{"calls", "transfer", "c1"}, "a call id and a target URI"},
		{[]string{"calls", "transfer", "c1", "sip:x@127.0.0.1", "-header", "X-Case"}, "Name=Value"},
		{[]string{"calls", "hold"}, "exactly one call id"},
		{[]string{"calls", "resume", "a", "b"}, "exactly one call id"},
	} {
		_, errs, code := runIn(t, getenv, tc.args...)
		require.NotEqual(t, 0, code, tc.args)
		require.Contains(t, errs, tc.want, tc.args)
	}
}
