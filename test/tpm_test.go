package test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

// TestTPMEnforced: a key's tpm counts the tokens its sessions' responses
// report; once a minute's tokens are strictly over it, new requests of
// that key (and of its client secrets) are 429 with Retry-After, while its
// session in flight goes on and other keys are not touched.
func TestTPMEnforced(t *testing.T) {
	const keyEnv = "SWITCHBOARD_TEST_TPM_UPSTREAM_KEY"
	t.Setenv(keyEnv, "sk-tpm-test")
	up := realtimetest.NewServer(t, realtimetest.Options{APIKey: "sk-tpm-test"})
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), withDrain(map[string]string{
		"SWITCHBOARD_UPSTREAM_URL": up.URL(), "SWITCHBOARD_UPSTREAM_API_KEY_ENV": keyEnv,
	})))
	mk := func(name, tpm string) string {
		return d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": name, "tpm": tpm,
			"acls": []string{"api-key:endpoint:realtime", "api-key:endpoint:client-secrets", "api-key:model:*"}}, 200)["apiKey"].(string)
	}
	limited, other := mk("limited", "100"), mk("other", "100")
	_, sec := secretOf(t, d, limited, nil)

	c, status, body := dialController(t, wsURL(d, ""), bearer(limited))
	require.Equal(t, 101, status, "%s", body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uc, err := up.Accept(ctx)
	require.NoError(t, err)
	c.next(t, "session.created", 5*time.Second)
	usage := json.RawMessage(`{"total_tokens":150,"input_tokens":100,"output_tokens":50}`)
	require.NoError(t, uc.Send(&realtime.ResponseDone{Response: realtime.Response{ID: "resp_1", Object: "realtime.response",
		Status: realtime.StatusCompleted, Output: []realtime.Item{}, Usage: usage}}))
	c.next(t, "response.done", 5*time.Second)

	require.Eventually(t, func() bool {
		st, h, _ := d.Do(t, "GET", "/v1/api-key", limited, nil)
		return st == 429 && h.Get("Retry-After") != ""
	}, 3*time.Second, 50*time.Millisecond)
	_, status, body = dialController(t, wsURL(d, ""), bearer(limited))
	require.Equal(t, 429, status, "%s", body)
	_, status, _ = dialController(t, wsURL(d, ""), bearer(sec["value"].(string)))
	require.Equal(t, 429, status, "a client secret of the key is limited with it")
	d.JSON(t, "GET", "/v1/api-key", other, nil, 200)

	// In flight: the open session is not aborted.
	c.send(t, map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "still here"}}}})
	_, err = uc.Expect(ctx, realtime.TypeConversationItemCreate)
	require.NoError(t, err)
}
