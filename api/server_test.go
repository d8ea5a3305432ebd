package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/api/httpx"
)

// keys accepts the bearer "good" for every route, and "limited" only for
// the endpoint "agents".
type keys struct{}

func (keys) Authorize(_ context.Context, token string, rt httpx.Route) (*httpx.Principal, error) {
	switch {
	case token == "":
		return nil, httpx.Unauthorized("missing key")
	case token == "good", token == "limited" && rt.Endpoint == "agents":
		return &httpx.Principal{KeyID: "key_1", TeamID: "team-a"}, nil
	case token == "limited":
		return nil, httpx.Forbidden("no ACL for " + rt.Endpoint)
	case token == "flood":
		return nil, httpx.TooManyRequests(time.Second)
	}
	return nil, httpx.Unauthorized("unknown key")
}

type module []httpx.Route

func (m module) Routes() []httpx.Route { return m }

func newServer(t *testing.T, ready error) (*Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	mod := module{
		{Method: http.MethodGet, Pattern: "/v1/agents", Endpoint: "agents", Handler: func(w http.ResponseWriter, r *http.Request) error {
			httpx.WriteJSON(w, http.StatusOK, map[string]string{"team": httpx.PrincipalFrom(r.Context()).TeamID})
			return nil
		}},
		{Method: http.MethodPost, Pattern: "/v1/agents", Endpoint: "agents", Handler: func(w http.ResponseWriter, r *http.Request) error {
			var v struct {
				Name string `json:"name"`
			}
			if err := httpx.Decode(r, 64, &v); err != nil {
				return err
			}
			httpx.WriteJSON(w, http.StatusOK, v)
			return nil
		}},
		{Method: http.MethodGet, Pattern: "/v1/calls", Endpoint: "calls", Handler: func(http.ResponseWriter, *http.Request) error {
			return errors.New("store exploded")
		}},
		{Method: http.MethodGet, Pattern: "/v1/panic", Endpoint: "calls", Access: httpx.Public, Handler: func(http.ResponseWriter, *http.Request) error {
			panic("boom")
		}},
	}
	s := New(zerolog.New(&logs), keys{}, []Module{mod}, WithReadyCheck(func(context.Context) error { return ready }),
		WithMetrics(prometheus.NewRegistry()))
	return s, &logs
}

type errorBody struct {
	Error struct {
		Code, Message, Param string
	} `json:"error"`
}

func do(t *testing.T, s *Server, method, target, token, ctype, body string) (*httptest.ResponseRecorder, errorBody) {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	var e errorBody
	if w.Code >= 400 {
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), "%s %s", method, target)
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e), w.Body.String())
		require.NotEmpty(t, e.Error.Code)
	}
	return w, e
}

// TestRouting: unknown paths, odd paths and unknown methods answer the
// JSON error shape with honest statuses (never an HTML redirect).
func TestRouting(t *testing.T) {
	s, _ := newServer(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/nope", 404},
		{"GET", "/", 404},
		{"GET", "//v1/agents", 404},
		{"GET", "/v1//agents", 404},
		{"GET", "/v1/./agents", 404},
		{"GET", "/v1/agents/", 404},
		{"DELETE", "/v1/agents", 405},
		{"BREW", "/v1/agents", 405},
	} {
		w, _ := do(t, s, tc.method, tc.path, "good", "", "")
		require.Equal(t, tc.status, w.Code, "%s %s", tc.method, tc.path)
		if tc.status == 405 {
			require.Equal(t, "GET, POST", w.Header().Get("Allow"))
		}
	}
	w, _ := do(t, s, "GET", "/v1/agents", "good", "", "")
	require.Equal(t, 200, w.Code)
	require.JSONEq(t, `{"team":"team-a"}`, w.Body.String())
}

// TestAuthorization: no key 401, an unknown key 401, a key without the
// route's endpoint 403; public routes need none.
func TestAuthorization(t *testing.T) {
	s, _ := newServer(t, nil)
	w, e := do(t, s, "GET", "/v1/agents", "", "", "")
	require.Equal(t, 401, w.Code)
	require.NotEmpty(t, e.Error.Message)
	w, _ = do(t, s, "GET", "/v1/agents", "forged", "", "")
	require.Equal(t, 401, w.Code)
	w, _ = do(t, s, "GET", "/v1/calls", "limited", "", "")
	require.Equal(t, 403, w.Code)
	w, _ = do(t, s, "GET", "/v1/agents", "limited", "", "")
	require.Equal(t, 200, w.Code)
	w, _ = do(t, s, "GET", "/healthz", "", "", "")
	require.Equal(t, 200, w.Code)
}

// TestFailures: a handler's plain error is a 500 that says nothing of it
// and is logged; a panic is a 500 and the server goes on.
func TestFailures(t *testing.T) {
	s, logs := newServer(t, nil)
	w, e := do(t, s, "GET", "/v1/calls", "good", "", "")
	require.Equal(t, 500, w.Code)
	require.NotContains(t, e.Error.Message, "exploded")
	require.Contains(t, logs.String(), "store exploded")

	w, _ = do(t, s, "GET", "/v1/panic", "", "", "")
	require.Equal(t, 500, w.Code)
	require.Contains(t, logs.String(), "handler panicked")
	w, _ = do(t, s, "GET", "/healthz", "", "", "")
	require.Equal(t, 200, w.Code)
	require.Contains(t, logs.String(), `"status":500`)
}

// TestDecode: strict JSON bodies (unknown fields, trailing data, wrong
// content type, too large) are refused with their status.
func TestDecode(t *testing.T) {
	s, _ := newServer(t, nil)
	for _, tc := range []struct {
		ctype, body string
		status      int
	}{
		{"application/json", `{"name":"a"}`, 200},
		{"", `{"name":"a"}`, 200},
		{"application/json; charset=utf-8", `{"name":"a"}`, 200},
		{"application/json", `{"name":"a","extra":1}`, 400},
		{"application/json", `{"name":"a"} {}`, 400},
		{"application/json", `{"name":`, 400},
		{"text/plain", `{"name":"a"}`, 415},
		{"application/json", `{"name":"` + strings.Repeat("a", 100) + `"}`, 413},
	} {
		w, _ := do(t, s, "POST", "/v1/agents", "good", tc.ctype, tc.body)
		require.Equal(t, tc.status, w.Code, "%q %s", tc.ctype, tc.body)
	}
}

// TestProbes: /readyz follows the readiness checks (503 with Retry-After
// when one fails); /metrics serves the registry.
func TestProbes(t *testing.T) {
	s, _ := newServer(t, nil)
	w, _ := do(t, s, "GET", "/readyz", "", "", "")
	require.Equal(t, 200, w.Code)
	w, _ = do(t, s, "GET", "/metrics", "", "", "")
	require.Equal(t, 200, w.Code)

	s, _ = newServer(t, errors.New("draining"))
	w, e := do(t, s, "GET", "/readyz", "", "", "")
	require.Equal(t, 503, w.Code)
	require.Contains(t, e.Error.Message, "draining")
	require.NotEmpty(t, w.Header().Get("Retry-After"))
}

// TestRefusalsAreSampled: requests refused for their rate (429) log one
// line a second with the count of the others, not a line each.
func TestRefusalsAreSampled(t *testing.T) {
	s, logs := newServer(t, nil)
	for range 50 {
		w, _ := do(t, s, "GET", "/v1/agents", "flood", "", "")
		require.Equal(t, 429, w.Code)
		require.Equal(t, "1", w.Header().Get("Retry-After"))
	}
	require.Equal(t, 1, strings.Count(logs.String(), `"status":429`), "%s", logs.String())
	w, _ := do(t, s, "GET", "/v1/agents", "good", "", "")
	require.Equal(t, 200, w.Code)
	require.Equal(t, 1, strings.Count(logs.String(), `"status":200`), "other requests are all logged")
	s.limited.last = time.Now().Add(-time.Second)
	do(t, s, "GET", "/v1/agents", "flood", "", "")
	require.Contains(t, logs.String(), `"refused_unlogged":49`)
}

// TestAuthFailuresThrottleTheSource: a source that keeps sending unknown
// keys is refused 429 before any lookup, whatever key it sends, until the
// window ends; other sources are not affected.
func TestAuthFailuresThrottleTheSource(t *testing.T) {
	var logs bytes.Buffer
	var lookups int
	authz := authzFunc(func(ctx context.Context, token string, rt httpx.Route) (*httpx.Principal, error) {
		lookups++
		return keys{}.Authorize(ctx, token, rt)
	})
	s := New(zerolog.New(&logs), authz, []Module{module{{Method: http.MethodGet, Pattern: "/v1/agents", Endpoint: "agents",
		Handler: func(w http.ResponseWriter, r *http.Request) error {
			httpx.WriteJSON(w, 200, map[string]string{})
			return nil
		}}}},
		WithAuthFailLimit(3, 300*time.Millisecond))
	from := func(addr, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/v1/agents", nil)
		r.RemoteAddr = addr
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		return w
	}
	for _, tok := range []string{"made-up-1", "", "", "made-up-2", "made-up-3"} {
		require.Equal(t, 401, from("192.0.2.7:4000", tok).Code, "no key costs no lookup and is not counted")
	}
	n := lookups
	w := from("192.0.2.7:4001", "made-up-4")
	require.Equal(t, 429, w.Code)
	require.Equal(t, "1", w.Header().Get("Retry-After"))
	require.Equal(t, 429, from("192.0.2.7:4002", "good").Code, "the whole source waits")
	require.Equal(t, n, lookups, "no lookup while throttled")
	require.Equal(t, 200, from("[2001:db8::1]:4000", "good").Code, "other sources go on")
	s.fails.mu.Lock()
	s.fails.m[netip.MustParseAddr("192.0.2.7")].start = time.Now().Add(-300 * time.Millisecond) // the window ended
	s.fails.mu.Unlock()
	require.Equal(t, 200, from("192.0.2.7:4003", "good").Code, "after the window")
}

type authzFunc func(context.Context, string, httpx.Route) (*httpx.Principal, error)

func (f authzFunc) Authorize(ctx context.Context, token string, rt httpx.Route) (*httpx.Principal, error) {
	return f(ctx, token, rt)
}
