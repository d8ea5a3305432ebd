package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/api"
	"switchboard/auth"
	"switchboard/store"
)

// fakeClock is a settable clock shared by the service under test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type harness struct {
	t     *testing.T
	url   string
	owner string
	clock *fakeClock
	st    store.Store
}

func newHarness(t *testing.T, opts ...auth.KeyOption) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenSQLite(context.Background(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	ks := auth.NewKeyService(st, append([]auth.KeyOption{auth.WithClock(clock.Now), auth.WithNodeAddress("10.0.0.7:8080")}, opts...)...)
	path, err := ks.Bootstrap(context.Background(), dir, "default", "")
	require.NoError(t, err)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	srv := api.New(zerolog.Nop(), ks, []api.Module{ks})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &harness{t: t, url: hs.URL, owner: strings.TrimSpace(string(raw)), clock: clock, st: st}
}

func (h *harness) do(method, path, key string, body any) (int, http.Header, map[string]any) {
	h.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	require.NoError(h.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	require.NoError(h.t, json.Unmarshal(raw, &m), "body %q", raw)
	return resp.StatusCode, resp.Header, m
}

func (h *harness) create(body map[string]any) (id, secret string) {
	h.t.Helper()
	st, _, m := h.do("POST", "/auth/teams/default/api-keys", h.owner, body)
	require.Equal(h.t, 200, st, "%v", m)
	return m["apiKeyId"].(string), m["apiKey"].(string)
}

func errParam(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	p, _ := e["param"].(string)
	return p
}

func TestCreateListShowsSecretOnce(t *testing.T) {
	h := newHarness(t)
	id, secret := h.create(map[string]any{"name": "ci", "acls": []string{"api-key:endpoint:*", "api-key:model:*"}, "qps": 5})
	require.True(t, strings.HasPrefix(secret, auth.APIKeyPrefix))

	st, _, m := h.do("GET", "/auth/teams/default/api-keys", h.owner, nil)
	require.Equal(t, 200, st)
	for _, k := range m["apiKeys"].([]any) {
		km := k.(map[string]any)
		require.NotContains(t, km, "apiKey", "a listing must never carry a secret")
		if km["apiKeyId"] == id {
			require.Equal(t, auth.Redact(secret), km["redactedApiKey"])
			require.EqualValues(t, 5, km["qps"])
		}
	}
	// The new key describes itself.
	st, _, self := h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 200, st)
	require.Equal(t, id, self["api_key_id"])
	require.Equal(t, "default", self["team_id"])
	for _, f := range []string{"acls", "api_key_blocked", "api_key_disabled", "create_time", "modified_by", "modify_time", "name", "redacted_api_key", "team_blocked", "user_id"} {
		require.Contains(t, self, f)
	}
	// Propagation names this node.
	st, _, p := h.do("GET", "/auth/api-keys/"+id+"/propagation", h.owner, nil)
	require.Equal(t, 200, st)
	require.Equal(t, map[string]any{"10.0.0.7:8080": true}, p["icPropagation"])
}

func TestCreateValidation(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name  string
		body  any
		code  int
		param string
	}{
		{"no name", map[string]any{"acls": []string{}}, 400, "name"},
		{"bad acl", map[string]any{"name": "x", "acls": []string{"endpoint:*"}}, 400, "acls[0]"},
		{"negative qps", map[string]any{"name": "x", "qps": -1}, 400, "qps"},
		{"bad tpm", map[string]any{"name": "x", "tpm": "lots"}, 400, "tpm"},
		{"past expiry", map[string]any{"name": "x", "expireTime": "2020-01-01T00:00:00Z"}, 400, "expireTime"},
		{"bad expiry", map[string]any{"name": "x", "expireTime": "tomorrow"}, 400, "expireTime"},
		{"unknown field", map[string]any{"name": "x", "color": "red"}, 400, "color"},
		{"not json", "{", 400, ""},
		{"too large", `{"name":"` + strings.Repeat("a", 2<<20) + `"}`, 413, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, _, m := h.do("POST", "/auth/teams/default/api-keys", h.owner, c.body)
			require.Equal(t, c.code, st, "%v", m)
			require.Equal(t, c.param, errParam(m))
		})
	}
	st, _, m := h.do("POST", "/auth/teams/other/api-keys", h.owner, map[string]any{"name": "x"})
	require.Equal(t, 404, st, "%v", m)
	n, err := h.st.Keys().Count(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n, "failed requests must leave no key behind")
}

func TestACLEnforcement(t *testing.T) {
	h := newHarness(t)
	_, empty := h.create(map[string]any{"name": "empty"})
	_, audit := h.create(map[string]any{"name": "numbers", "acls": []string{"api-key:endpoint:phone-numbers"}})
	_, mgmt := h.create(map[string]any{"name": "mgmt", "managementKey": true})

	// An empty ACL fails every API request.
	st, _, _ := h.do("GET", "/v1/api-key", empty, nil)
	require.Equal(t, 403, st)
	// A non-management key cannot manage keys or read the audit log.
	for _, p := range []string{"/auth/teams/default/api-keys", "/audit/teams/default/events"} {
		st, _, _ = h.do("GET", p, audit, nil)
		require.Equal(t, 403, st, p)
	}
	// A management key can.
	st, _, _ = h.do("GET", "/audit/teams/default/events", mgmt, nil)
	require.Equal(t, 200, st)
	// No key, a bad key.
	st, _, _ = h.do("GET", "/v1/api-key", "", nil)
	require.Equal(t, 401, st)
	st, _, _ = h.do("GET", "/v1/api-key", "sb-nonsense", nil)
	require.Equal(t, 401, st)
	// Method and path errors keep the JSON shape.
	st, hdr, m := h.do("PATCH", "/auth/teams/default/api-keys", h.owner, nil)
	require.Equal(t, 405, st)
	require.Equal(t, "GET, POST", hdr.Get("Allow"))
	require.Contains(t, m, "error")
	st, _, m = h.do("GET", "/nope", h.owner, nil)
	require.Equal(t, 404, st)
	require.Contains(t, m, "error")
}

// TestDefaultRateLimits: a key without limits of its own, the owner key
// included, gets the default qps and qpm; a key's own limit wins over the
// default, field by field.
func TestDefaultRateLimits(t *testing.T) {
	h := newHarness(t, auth.WithDefaultLimits(3, 5))
	burst := func(key string) (ok int, retry string) {
		for range 10 {
			st, hdr, _ := h.do("GET", "/v1/api-key", key, nil)
			if st == 429 {
				return ok, hdr.Get("Retry-After")
			}
			require.Equal(t, 200, st)
			ok++
		}
		return ok, ""
	}
	n, retry := burst(h.owner)
	require.Equal(t, 3, n, "the owner key is limited by the default qps")
	require.Equal(t, "1", retry)
	h.clock.Add(time.Second)
	n, _ = burst(h.owner)
	require.Equal(t, 2, n, "then by the default qpm (5 a minute)")
	h.clock.Add(time.Minute)

	_, own := h.create(map[string]any{"name": "own", "acls": []string{"api-key:endpoint:*"}, "qps": 8})
	n, _ = burst(own)
	require.Equal(t, 5, n, "its own qps (8), the default qpm (5)")
	_, both := h.create(map[string]any{"name": "both", "acls": []string{"api-key:endpoint:*"}, "qps": 8, "qpm": 100})
	n, _ = burst(both)
	require.Equal(t, 8, n, "its own qps and qpm")
}

// TestKeyLookupCache: a key is read from the store at most four times a
// second; a change through this service applies at once, one written to
// the store by another node within a quarter of a second.
func TestKeyLookupCache(t *testing.T) {
	h := newHarness(t)
	id, secret := h.create(map[string]any{"name": "k", "acls": []string{"api-key:endpoint:*"}})
	st, _, _ := h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 200, st)
	k, err := h.st.Keys().Get(context.Background(), id)
	require.NoError(t, err)
	k.Disabled = true // another node disables it, in the shared store
	require.NoError(t, h.st.Keys().Update(context.Background(), k))
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 200, st, "still the cached key within its quarter second")
	h.clock.Add(250 * time.Millisecond)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 401, st, "read again after a quarter of a second")

	st, _, m := h.do("PUT", "/auth/api-keys/"+id, h.owner, map[string]any{"apiKey": map[string]any{"disabled": false}, "fieldMask": "disabled"})
	require.Equal(t, 200, st, "%v", m)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 200, st, "a change through this service applies at once")
	st, _, _ = h.do("DELETE", "/auth/api-keys/"+id, h.owner, nil)
	require.Equal(t, 200, st)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 401, st)
}

func TestDisableExpireAndRateLimit(t *testing.T) {
	h := newHarness(t)
	id, secret := h.create(map[string]any{"name": "k", "acls": []string{"api-key:endpoint:*"}, "qps": 2,
		"expireTime": h.clock.Now().Add(time.Hour).Format(time.RFC3339)})
	for i := 0; i < 2; i++ {
		st, _, _ := h.do("GET", "/v1/api-key", secret, nil)
		require.Equal(t, 200, st)
	}
	st, hdr, _ := h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 429, st)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	h.clock.Add(time.Second)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 200, st)

	// Disable, then enable with a field mask.
	st, _, m := h.do("PUT", "/auth/api-keys/"+id, h.owner, map[string]any{"apiKey": map[string]any{"disabled": true}, "fieldMask": "disabled"})
	require.Equal(t, 200, st, "%v", m)
	require.Equal(t, true, m["disabled"])
	h.clock.Add(time.Second)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 401, st)
	st, _, m = h.do("PUT", "/auth/api-keys/"+id, h.owner, map[string]any{"apiKey": map[string]any{"disabled": false, "name": "ignored"}, "fieldMask": "disabled"})
	require.Equal(t, 200, st)
	require.Equal(t, "k", m["name"], "fields outside the mask must not change")
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 200, st)
	st, _, m = h.do("PUT", "/auth/api-keys/"+id, h.owner, map[string]any{"apiKey": map[string]any{}, "fieldMask": "apiKeyId"})
	require.Equal(t, 400, st)
	require.Equal(t, "fieldMask", errParam(m))

	// Expiry.
	h.clock.Add(time.Hour)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 401, st)
	// activeOnly hides it.
	_, _, m = h.do("GET", "/auth/teams/default/api-keys?activeOnly=true", h.owner, nil)
	for _, k := range m["apiKeys"].([]any) {
		require.NotEqual(t, id, k.(map[string]any)["apiKeyId"])
	}
}

func TestRotationGrace(t *testing.T) {
	h := newHarness(t)
	id, old := h.create(map[string]any{"name": "k", "acls": []string{"api-key:endpoint:*"}})
	st, _, m := h.do("POST", "/auth/api-keys/"+id+"/rotate", h.owner, map[string]any{})
	require.Equal(t, 200, st, "%v", m)
	fresh := m["apiKey"].(string)
	require.NotEqual(t, old, fresh)
	require.Equal(t, h.clock.Now().Add(24*time.Hour).Format(time.RFC3339Nano), m["oldSecretExpireTime"])

	for _, k := range []string{old, fresh} {
		st, _, _ = h.do("GET", "/v1/api-key", k, nil)
		require.Equal(t, 200, st)
	}
	h.clock.Add(24 * time.Hour)
	st, _, _ = h.do("GET", "/v1/api-key", old, nil)
	require.Equal(t, 401, st, "the old secret must stop working when its grace ends")
	st, _, _ = h.do("GET", "/v1/api-key", fresh, nil)
	require.Equal(t, 200, st)

	// At most seven days of grace.
	st, _, m = h.do("POST", "/auth/api-keys/"+id+"/rotate", h.owner,
		map[string]any{"oldSecretExpireTime": h.clock.Now().Add(8 * 24 * time.Hour).Format(time.RFC3339)})
	require.Equal(t, 400, st)
	require.Equal(t, "oldSecretExpireTime", errParam(m))
	// A custom, shorter grace.
	st, _, m = h.do("POST", "/auth/api-keys/"+id+"/rotate", h.owner,
		map[string]any{"oldSecretExpireTime": h.clock.Now().Add(time.Minute).Format(time.RFC3339)})
	require.Equal(t, 200, st)
	newest := m["apiKey"].(string)
	h.clock.Add(2 * time.Minute)
	st, _, _ = h.do("GET", "/v1/api-key", fresh, nil)
	require.Equal(t, 401, st)
	st, _, _ = h.do("GET", "/v1/api-key", newest, nil)
	require.Equal(t, 200, st)
}

func TestDeleteAndAudit(t *testing.T) {
	h := newHarness(t)
	id, secret := h.create(map[string]any{"name": "gone", "acls": []string{"api-key:endpoint:*"}})
	st, _, m := h.do("DELETE", "/auth/api-keys/"+id, h.owner, nil)
	require.Equal(t, 200, st)
	require.Empty(t, m)
	st, _, _ = h.do("GET", "/v1/api-key", secret, nil)
	require.Equal(t, 401, st)
	st, _, _ = h.do("DELETE", "/auth/api-keys/"+id, h.owner, nil)
	require.Equal(t, 404, st)
	st, _, _ = h.do("DELETE", "/auth/api-keys/"+auth.OwnerKeyID, h.owner, nil)
	require.Equal(t, 409, st)

	st, _, m = h.do("GET", "/audit/teams/default/events?orderBy=TIME_DESCENDING&pageSize=2", h.owner, nil)
	require.Equal(t, 200, st)
	evs := m["events"].([]any)
	require.Len(t, evs, 2)
	require.Equal(t, "api_key.delete", evs[0].(map[string]any)["action"])
	require.NotEmpty(t, m["nextPageToken"])
	st, _, m = h.do("GET", "/audit/teams/default/events?eventFilter.query=gone", h.owner, nil)
	require.Equal(t, 200, st)
	require.Len(t, m["events"].([]any), 2) // create and delete
	st, _, m = h.do("GET", "/audit/teams/default/events?orderBy=SIDEWAYS", h.owner, nil)
	require.Equal(t, 400, st)
	require.Equal(t, "orderBy", errParam(m))
	for _, e := range m {
		require.NotContains(t, e, secret)
	}
}
