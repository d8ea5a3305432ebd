package numbers_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/api"
	"switchboard/api/httpx"
	"switchboard/numbers"
	"switchboard/store"
)

// gcmSealer is a real AES-256-GCM box: base64(nonce || ciphertext).
type gcmSealer struct{ aead cipher.AEAD }

func newSealer(t *testing.T) *gcmSealer {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	return &gcmSealer{aead}
}

func (s *gcmSealer) Seal(plain []byte, aad string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(aad))), nil
}

func (s *gcmSealer) Open(sealed, aad string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return nil, errors.New("bad sealed value")
	}
	return s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], []byte(aad))
}

// testAuthz knows three keys: two teams with every ACL, and one of team A
// without the model ACL.
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
	}
	return nil, httpx.Unauthorized("unknown key")
}

var testPool = []string{"+14155550100", "+1 415 555 0101", "+12125550100", "not-a-number"}

type env struct {
	t      *testing.T
	url    string
	dir    string
	st     *store.SQLite
	svc    *numbers.Service
	sealer *gcmSealer
}

// newEnv serves the numbers and agents modules on a loopback listener over
// an on-disk SQLite store. wrap, when set, wraps the store the numbers
// module sees.
func newEnv(t *testing.T, wrap func(store.Store) store.Store) *env {
	t.Helper()
	return newEnvWith(t, wrap, nil)
}

// newEnvWith is newEnv with a hook that adjusts the numbers options.
func newEnvWith(t *testing.T, wrap func(store.Store) store.Store, adjust func(*numbers.Options)) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenSQLite(context.Background(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	var ns store.Store = st
	if wrap != nil {
		ns = wrap(st)
	}
	e := &env{t: t, dir: dir, st: st, sealer: newSealer(t)}
	opts := numbers.Options{SIPHost: "sip.example.test", Pool: testPool, Sealer: e.sealer}
	if adjust != nil {
		adjust(&opts)
	}
	e.svc = numbers.NewService(ns, opts)
	srv := api.New(zerolog.Nop(), testAuthz{}, []api.Module{e.svc, agent.NewService(st, agent.Options{})})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// do sends body (a string is sent as is, anything else as JSON) and
// returns the status, the raw body and the decoded object.
func (e *env) do(method, path, token string, body any) (int, string, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		js, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, "application/json", resp.Header.Get("Content-Type"), "body: %s", raw)
	var m map[string]any
	require.NoError(e.t, json.Unmarshal(raw, &m), "body: %s", raw)
	return resp.StatusCode, string(raw), m
}

// ok sends a request that must answer 200 and returns its object.
func (e *env) ok(method, path string, body any) map[string]any {
	e.t.Helper()
	status, raw, m := e.do(method, path, "team-a", body)
	require.Equal(e.t, http.StatusOK, status, "%s %s: %s", method, path, raw)
	return m
}

// fails sends a request that must fail with status and param.
func (e *env) fails(method, path string, body any, status int, param string) map[string]any {
	e.t.Helper()
	got, raw, m := e.do(method, path, "team-a", body)
	require.Equal(e.t, status, got, "%s %s: %s", method, path, raw)
	errObj, ok := m["error"].(map[string]any)
	require.True(e.t, ok, "error body: %s", raw)
	require.NotEmpty(e.t, errObj["message"])
	p, _ := errObj["param"].(string)
	require.Equal(e.t, param, p, "param of %s", raw)
	return errObj
}

func (e *env) newAgent(name string) string {
	e.t.Helper()
	return e.ok("POST", "/v1/agents", map[string]any{"name": name})["agent_id"].(string)
}

func obj(m map[string]any, k string) map[string]any {
	v, _ := m[k].(map[string]any)
	return v
}
