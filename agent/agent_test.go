package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/api"
	"switchboard/api/httpx"
	"switchboard/store"
)

type testAuthz struct{}

func (testAuthz) Authorize(_ context.Context, token string, _ httpx.Route) (*httpx.Principal, error) {
	all := func(string) bool { return true }
	switch token {
	case "team-a":
		return &httpx.Principal{KeyID: "key_a", TeamID: "team_a", UserID: "user_a", AllowsModel: all}, nil
	case "team-b":
		return &httpx.Principal{KeyID: "key_b", TeamID: "team_b", UserID: "user_b", AllowsModel: all}, nil
	case "no-model":
		return &httpx.Principal{KeyID: "key_n", TeamID: "team_a", UserID: "user_n", AllowsModel: func(string) bool { return false }}, nil
	case "fast-only":
		return &httpx.Principal{KeyID: "key_f", TeamID: "team_a", UserID: "user_f",
			AllowsModel: func(m string) bool { return m == "svc-voice-fast-1.0" }}, nil
	}
	return nil, httpx.Unauthorized("unknown key")
}

type env struct {
	t   *testing.T
	url string
	st  *store.SQLite
	svc *agent.Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	// Each reading of the clock is a minute later than the last.
	tick := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	svc := agent.NewService(st, agent.Options{Now: func() time.Time { tick = tick.Add(time.Minute); return tick }})
	hs := httptest.NewServer(api.New(zerolog.Nop(), testAuthz{}, []api.Module{svc}).Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, url: hs.URL, st: st, svc: svc}
}

func (e *env) do(method, path, token string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	var m map[string]any
	require.NoError(e.t, json.Unmarshal(raw, &m), "body: %s", raw)
	return resp.StatusCode, m
}

func (e *env) ok(method, path string, body any) map[string]any {
	e.t.Helper()
	status, m := e.do(method, path, "team-a", body)
	require.Equal(e.t, http.StatusOK, status, "%s %s: %v", method, path, m)
	return m
}

func (e *env) fails(method, path, token string, body any, status int, param string) {
	e.t.Helper()
	got, m := e.do(method, path, token, body)
	require.Equal(e.t, status, got, "%s %s: %v", method, path, m)
	errObj, _ := m["error"].(map[string]any)
	require.NotNil(e.t, errObj, "error body: %v", m)
	p, _ := errObj["param"].(string)
	require.Equal(e.t, param, p, "%v", errObj)
}

func TestCreateDefaultsAndRead(t *testing.T) {
	e := newEnv(t)
	a := e.ok("POST", "/v1/agents", map[string]any{"name": " Front desk ", "instructions": "Be brief."})
	id := a["agent_id"].(string)
	require.True(t, strings.HasPrefix(id, "ag_"))
	require.Equal(t, "team_a", a["team_id"])
	require.Equal(t, "Front desk", a["name"])
	require.Equal(t, "Be brief.", a["instructions"])
	require.Equal(t, "eve", a["voice"])
	require.Equal(t, "svc-voice-latest", a["model"])
	require.NotContains(t, a, "language")
	require.NotContains(t, a, "greeting")
	require.Equal(t, "2026-01-02T03:05:05Z", a["created_at"])
	require.Equal(t, a["created_at"], a["updated_at"])
	require.Equal(t, a, e.ok("GET", "/v1/agents/"+id, nil))

	b := e.ok("POST", "/v1/agents", map[string]any{"name": "Sales", "voice": "REX", "model": "svc-voice-fast-1.0",
		"language": "pt-br", "greeting": "Olá!"})
	require.Equal(t, "rex", b["voice"], "voices are stored lower-case")
	require.Equal(t, "pt-BR", b["language"])
	require.Equal(t, "Olá!", b["greeting"])

	cfg, err := e.svc.Load(context.Background(), b["agent_id"].(string))
	require.NoError(t, err)
	require.Equal(t, agent.Settings{Voice: "rex", Model: "svc-voice-fast-1.0", Language: "pt-BR", Greeting: "Olá!",
		Engine: agent.EngineEcho, Fallback: agent.FallbackRefuse}, cfg.Settings)
	require.Equal(t, "Sales", cfg.Name)
	require.Equal(t, "team_a", cfg.TeamID)
	_, err = e.svc.Load(context.Background(), "ag_nope")
	require.ErrorIs(t, err, agent.ErrUnknownAgent)

	// Another team sees neither.
	status, m := e.do("GET", "/v1/agents/"+id, "team-b", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", m["error"].(map[string]any)["code"])
	_, m = e.do("GET", "/v1/agents", "team-b", nil)
	require.Equal(t, []any{}, m["agents"])
}

func TestValidation(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name   string
		body   any
		status int
		param  string
	}{
		{"no name", map[string]any{"voice": "eve"}, 400, "name"},
		{"blank name", map[string]any{"name": " "}, 400, "name"},
		{"long name", map[string]any{"name": strings.Repeat("é", 201)}, 400, "name"},
		{"unknown voice", map[string]any{"name": "a", "voice": "bob"}, 400, "voice"},
		{"unknown model", map[string]any{"name": "a", "model": "gpt-4"}, 400, "model"},
		{"bad language", map[string]any{"name": "a", "language": "english"}, 400, "language"},
		{"bad region", map[string]any{"name": "a", "language": "en-USA1"}, 400, "language"},
		{"long instructions", map[string]any{"name": "a", "instructions": strings.Repeat("x", 32*1024+1)}, 400, "instructions"},
		{"long greeting", map[string]any{"name": "a", "greeting": strings.Repeat("x", 2001)}, 400, "greeting"},
		{"tool to metadata", map[string]any{"name": "a", "tools": []any{map[string]any{"name": "t", "url": "https://169.254.169.254/x"}}}, 400, "tools[0].url"},
		{"tool to link-local", map[string]any{"name": "a", "tools": []any{map[string]any{"name": "ok", "url": "https://tools.example/x"},
			map[string]any{"name": "t", "url": "https://[fe80::1]/x"}}}, 400, "tools[1].url"},
		{"unknown field", map[string]any{"name": "a", "temperature": 0.5}, 400, "temperature"},
		{"wrong type", map[string]any{"name": "a", "voice": 3}, 400, "voice"},
		{"not json", "{nope", 400, ""},
		{"too large", `{"name":"` + strings.Repeat("x", 1<<20) + `"}`, 413, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.fails("POST", "/v1/agents", "team-a", c.body, c.status, c.param)
		})
	}
	e.t = t
	// Exactly at the limits is fine.
	e.ok("POST", "/v1/agents", map[string]any{"name": strings.Repeat("é", 200), "instructions": strings.Repeat("x", 32*1024),
		"greeting": strings.Repeat("x", 2000), "language": "auto"})
	require.Len(t, e.ok("GET", "/v1/agents", nil)["agents"], 1, "failed requests stored nothing")
}

func TestModelACL(t *testing.T) {
	e := newEnv(t)
	// Naming a model needs the model ACL; the default needs none.
	e.fails("POST", "/v1/agents", "no-model", map[string]any{"name": "a", "model": "svc-voice-latest"}, http.StatusForbidden, "")
	status, a := e.do("POST", "/v1/agents", "no-model", map[string]any{"name": "a"})
	require.Equal(t, http.StatusOK, status)
	id := a["agent_id"].(string)
	e.fails("PATCH", "/v1/agents/"+id, "no-model", map[string]any{"model": "svc-voice-fast-1.0"}, http.StatusForbidden, "")
	e.fails("PATCH", "/v1/agents/"+id, "fast-only", map[string]any{"model": "svc-voice-think-fast-1.0"}, http.StatusForbidden, "")
	status, a = e.do("PATCH", "/v1/agents/"+id, "fast-only", map[string]any{"model": "svc-voice-fast-1.0"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "svc-voice-fast-1.0", a["model"])
	// An unknown model is a 400 before the ACL is consulted.
	e.fails("PATCH", "/v1/agents/"+id, "no-model", map[string]any{"model": "nope"}, http.StatusBadRequest, "model")
}

func TestPatch(t *testing.T) {
	e := newEnv(t)
	a := e.ok("POST", "/v1/agents", map[string]any{"name": "A", "instructions": "one", "language": "en", "greeting": "Hi"})
	path := "/v1/agents/" + a["agent_id"].(string)
	e.fails("PATCH", path, "team-a", map[string]any{"name": ""}, 400, "name")
	e.fails("PATCH", path, "team-a", map[string]any{"voice": "nobody"}, 400, "voice")
	e.fails("PATCH", path, "team-a", map[string]any{"agent_id": "ag_x"}, 400, "agent_id")
	e.fails("PATCH", path, "team-b", map[string]any{"name": "B"}, 404, "")
	e.fails("PATCH", "/v1/agents/ag_nope", "team-a", map[string]any{"name": "B"}, 404, "")
	require.Equal(t, a, e.ok("GET", path, nil))

	b := e.ok("PATCH", path, map[string]any{"voice": "Ara", "greeting": "", "language": "EN-us"})
	require.Equal(t, "A", b["name"], "absent fields stay")
	require.Equal(t, "one", b["instructions"])
	require.Equal(t, "ara", b["voice"])
	require.Equal(t, "en-US", b["language"])
	require.NotContains(t, b, "greeting", "an empty greeting clears it")
	require.Equal(t, a["created_at"], b["created_at"])
	require.NotEqual(t, a["updated_at"], b["updated_at"])
	require.Equal(t, "2026-01-02T03:06:05Z", b["updated_at"])
	require.Equal(t, b, e.ok("GET", path, nil))
}

func TestDeleteRefusedWhileRouted(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	id := e.ok("POST", "/v1/agents", map[string]any{"name": "Busy"})["agent_id"].(string)
	now := time.Now()
	require.NoError(t, e.st.Numbers().Create(ctx, &store.PhoneNumber{ID: "pn_1", TeamID: "team_a", PhoneNumber: "+14155550100",
		Name: "n", Origin: "byo_trunk", AgentID: id, InboundTrunkID: "tr_1", CreateTime: now, UpdateTime: now}, nil))
	e.fails("DELETE", "/v1/agents/"+id, "team-a", nil, http.StatusConflict, "agent_id")
	e.ok("GET", "/v1/agents/"+id, nil)

	e.fails("DELETE", "/v1/agents/"+id, "team-b", nil, http.StatusNotFound, "")
	require.NoError(t, e.st.Numbers().Delete(ctx, "pn_1"))
	require.Equal(t, map[string]any{}, e.ok("DELETE", "/v1/agents/"+id, nil))
	e.fails("GET", "/v1/agents/"+id, "team-a", nil, http.StatusNotFound, "")
	e.fails("DELETE", "/v1/agents/"+id, "team-a", nil, http.StatusNotFound, "")
}

func TestAuditAndPagination(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.ok("POST", "/v1/agents", map[string]any{"name": fmt.Sprint("a", i)})["agent_id"].(string))
	}
	e.ok("PATCH", "/v1/agents/"+ids[0], map[string]any{"instructions": "x"})
	e.ok("DELETE", "/v1/agents/"+ids[1], nil)

	var got []string
	tok := ""
	for pages := 1; ; pages++ {
		path := "/v1/agents?page_size=2"
		if tok != "" {
			path += "&page_token=" + tok
		}
		m := e.ok("GET", path, nil)
		for _, v := range m["agents"].([]any) {
			got = append(got, v.(map[string]any)["agent_id"].(string))
		}
		next, ok := m["next_page_token"].(string)
		if !ok {
			require.Equal(t, 2, pages)
			break
		}
		tok = next
	}
	require.ElementsMatch(t, []string{ids[0], ids[2], ids[3], ids[4]}, got)
	e.fails("GET", "/v1/agents?page_size=0", "team-a", nil, 400, "page_size")
	e.fails("GET", "/v1/agents?page_token=zz!", "team-a", nil, 400, "page_token")

	evs, _, err := e.st.Audit().List(ctx, "team_a", store.AuditQuery{})
	require.NoError(t, err)
	count := map[string]int{}
	for _, ev := range evs {
		count[ev.Action]++
		require.Equal(t, "user_a", ev.UserID)
	}
	require.Equal(t, map[string]int{"agent.create": 5, "agent.update": 1, "agent.delete": 1}, count)
}
