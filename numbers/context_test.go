package numbers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestContextSetting: a number's context_url and context_timeout_ms are
// checked (an http(s) URL the address policy allows, 100 to 10000 ms, not
// on a webhook number), shown with the timeout in force, resolved for the
// call's route and removed by PATCH with null.
func TestContextSetting(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	agentID := e.newAgent("ctx")
	base := func(extra map[string]any) map[string]any {
		b := map[string]any{"origin": "byo_trunk", "name": "X", "phone_number": "+14155550150", "agent_id": agentID}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	e.fails("POST", "/v2/phone-numbers", base(map[string]any{"context_url": "ftp://crm.example/ctx"}), http.StatusBadRequest, "context_url")
	e.fails("POST", "/v2/phone-numbers", base(map[string]any{"context_url": "http://169.254.169.254/latest/meta-data"}), http.StatusBadRequest, "context_url")
	e.fails("POST", "/v2/phone-numbers", base(map[string]any{"context_url": "http://[fe80::1]/ctx"}), http.StatusBadRequest, "context_url")
	e.fails("POST", "/v2/phone-numbers", base(map[string]any{"context_url": "https://crm.example/ctx", "context_timeout_ms": 50}), http.StatusBadRequest, "context_timeout_ms")
	e.fails("POST", "/v2/phone-numbers", base(map[string]any{"context_url": "https://crm.example/ctx", "context_timeout_ms": 10001}), http.StatusBadRequest, "context_timeout_ms")
	e.fails("POST", "/v2/phone-numbers", base(map[string]any{"context_timeout_ms": "fast"}), http.StatusBadRequest, "context_timeout_ms")
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "W", "phone_number": "+14155550151",
		"webhook": map[string]any{"url": "https://app.example/hook"}, "context_url": "https://crm.example/ctx"}, http.StatusBadRequest, "context_url")

	n := obj(e.ok("POST", "/v2/phone-numbers", base(map[string]any{"context_url": "https://crm.example/ctx"})), "phone_number")
	require.Equal(t, "https://crm.example/ctx", n["context_url"])
	require.EqualValues(t, 1500, n["context_timeout_ms"], "the default in force")
	res, err := e.svc.Resolve(ctx, "+14155550150")
	require.NoError(t, err)
	require.Equal(t, "https://crm.example/ctx", res.ContextURL)
	require.Equal(t, 1500*time.Millisecond, res.ContextTimeout)

	path := "/v2/phone-numbers/" + n["phone_number_id"].(string)
	n = obj(e.ok("PATCH", path, map[string]any{"context_timeout_ms": 400}), "phone_number")
	require.EqualValues(t, 400, n["context_timeout_ms"])
	e.fails("PATCH", path, map[string]any{"agent_id": nil, "webhook": map[string]any{"url": "https://app.example/hook"}}, http.StatusBadRequest, "context_url")
	n = obj(e.ok("PATCH", path, map[string]any{"context_url": nil}), "phone_number")
	require.NotContains(t, n, "context_url")
	require.NotContains(t, n, "context_timeout_ms")
	res, err = e.svc.Resolve(ctx, "+14155550150")
	require.NoError(t, err)
	require.Empty(t, res.ContextURL)
	// Without a context_url, a webhook is fine again.
	e.ok("PATCH", path, map[string]any{"agent_id": nil, "webhook": map[string]any{"url": "https://app.example/hook"}})
}
