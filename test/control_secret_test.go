package test

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// TestClientSecretSession: a client secret opens /v1/realtime without
// call_id (subprotocol or bearer), the stored session configuration is
// applied, and a text turn gets a response from the echo engine.
// Expired, unknown and malformed secrets are refused before the upgrade.
func TestClientSecretSession(t *testing.T) {
	d := startDaemon(t, withDrain(nil))
	sec := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{
		"expires_after": map[string]any{"anchor": "created_at", "seconds": 120},
		"session":       map[string]any{"type": "realtime", "instructions": "stored with the secret", "output_modalities": []string{"text"}},
	}, 200)
	value := sec["value"].(string)
	require.InDelta(t, float64(time.Now().Add(120*time.Second).Unix()), sec["expires_at"].(float64), 3)

	dialer := websocket.Dialer{Subprotocols: []string{"realtime", "svc-client-secret." + value}}
	conn, resp, err := dialer.Dial(wsURL(d, ""), nil)
	require.NoError(t, err)
	require.Equal(t, "realtime", resp.Header.Get("Sec-Websocket-Protocol"), "another offered protocol is chosen before the secret")
	conn.Close()

	c, status, body := dialController(t, wsURL(d, ""), bearer(value))
	require.Equal(t, 101, status, "%s", body)
	// The stored session is in force from session.created on, with the
	// default model; no unprompted session.updated follows.
	created := c.next(t, "session.created", 2*time.Second)["session"].(map[string]any)
	require.Equal(t, "stored with the secret", created["instructions"])
	require.Equal(t, "svc-voice-latest", created["model"])
	require.Equal(t, map[string]any{"effort": "high"}, created["reasoning"])
	c.next(t, "conversation.created", time.Second)
	c.send(t, map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello there"}}}})
	c.send(t, map[string]any{"type": "response.create"})
	c.next(t, "response.created", 5*time.Second)
	c.next(t, "response.done", 10*time.Second)
	for _, typ := range c.seen() {
		require.NotEqual(t, "session.updated", typ)
	}

	// Refusals, all before the upgrade.
	for name, tc := range map[string]struct {
		body   any
		status int
		param  string
	}{
		"too long":  {map[string]any{"expires_after": map[string]any{"seconds": 3601}}, 400, "expires_after.seconds"},
		"zero":      {map[string]any{"expires_after": map[string]any{"seconds": 0}}, 400, "expires_after.seconds"},
		"anchor":    {map[string]any{"expires_after": map[string]any{"anchor": "now", "seconds": 5}}, 400, "expires_after.anchor"},
		"session":   {map[string]any{"session": "x"}, 400, "session"},
		"unknown":   {map[string]any{"ttl": 5}, 400, "ttl"},
		"default":   {map[string]any{"session": nil}, 200, ""},
		"max":       {map[string]any{"expires_after": map[string]any{"seconds": 3600}}, 200, ""},
		"bad types": {map[string]any{"expires_after": map[string]any{"seconds": "5"}}, 400, "expires_after.seconds"},
	} {
		t.Run(name, func(t *testing.T) {
			m := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, tc.body, tc.status)
			if tc.status != 200 {
				require.Equal(t, tc.param, m["error"].(map[string]any)["param"])
			}
		})
	}
	d.JSON(t, "POST", "/v1/realtime/client_secrets", value, map[string]any{}, 401)

	short := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{"expires_after": map[string]any{"seconds": 1}}, 200)
	// A client secret's expiry is in whole seconds of real time.
	time.Sleep(1100 * time.Millisecond)
	_, status, body = dialController(t, wsURL(d, ""), bearer(short["value"].(string)))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, string(body), "expired")
	_, status, _ = dialController(t, wsURL(d, ""), bearer("sbcs-"+"0123456789012345678901234567890123456789abcdefgh"))
	require.Equal(t, http.StatusUnauthorized, status)
	_, status, _ = dialController(t, wsURL(d, ""), nil)
	require.Equal(t, http.StatusUnauthorized, status)
	_, status, _ = dialController(t, wsURL(d, ""), http.Header{"Sec-Websocket-Protocol": {"svc-client-secret.nope"}})
	require.Equal(t, http.StatusUnauthorized, status)

	// An API key opens a direct session too.
	c2, status, _ := dialController(t, wsURL(d, "?model=svc-voice-latest"), bearer(d.OwnerKey))
	require.Equal(t, 101, status)
	c2.next(t, "session.created", 2*time.Second)
}

// TestWebhookDispatchLatency measures INVITE received (the call's start)
// to the first realtime.call.incoming POST at the receiver, over 40
// calls. It reports the figures; it asserts no speed.
func TestWebhookDispatchLatency(t *testing.T) {
	const number = "+14155550145"
	h := newHookReceiver(t, 0)
	lat := make(chan time.Duration, 64)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "400ms", "SWITCHBOARD_MAX_CALLS": "100"}, h, number)
	h.onEvent = func(ev hookEvent) {
		if ev.Type != "realtime.call.incoming" {
			return
		}
		if c, ok := d.App.Calls().Get(ev.Data["call_id"].(string)); ok {
			lat <- ev.At.Sub(c.Snapshot().Started)
		}
	}
	const calls = 40
	run := startSipp(t, d, number, sippControl{Mode: "480"}, calls, 10)
	run.wait(t, 30*time.Second)
	close(lat)
	var ds []time.Duration
	for x := range lat {
		ds = append(ds, x)
	}
	require.Len(t, ds, calls)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	p := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))] }
	t.Logf("webhook dispatch latency (call start -> POST at receiver), %d calls: p50 %s p90 %s p99 %s max %s",
		len(ds), p(0.5), p(0.9), p(0.99), ds[len(ds)-1])
}
