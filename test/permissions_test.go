package test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// secretOf mints a client secret with key for session (nil: none) and
// returns the status and the secret or the error body.
func secretOf(t *testing.T, d *apptest.Daemon, key string, session any) (int, map[string]any) {
	t.Helper()
	body := map[string]any{}
	if session != nil {
		body["session"] = session
	}
	status, _, raw := d.Do(t, "POST", "/v1/realtime/client_secrets", key, body)
	return status, decodeJSON(t, raw)
}

// openRealtime dials /v1/realtime?q with the credential (a bearer key, or
// a client secret by subprotocol when proto is set) and returns the
// status, the error code of a refusal, and the socket when it opened.
func openRealtime(t *testing.T, d *apptest.Daemon, q, cred string, proto bool) (int, string, *controller) {
	t.Helper()
	h := bearer(cred)
	if proto {
		h = http.Header{"Sec-Websocket-Protocol": {"svc-client-secret." + cred}}
	}
	c, status, body := dialController(t, wsURL(d, q), h)
	if status != 101 {
		code, _, _ := apptest.ErrorOf(t, body)
		return status, code, nil
	}
	return status, "", c
}

// TestModelPermissionsHold: no key reaches a model it was not given. A
// key limited to svc-voice-fast-1.0 cannot mint a secret for another
// model, nor open one with ?model=, nor switch with session.update; a
// secret is bound to its stored model and to its creator's permissions as
// they are now; unknown models are refused with the JSON error; an
// endpoint-only key is refused everywhere (the spec wants both).
func TestModelPermissionsHold(t *testing.T) {
	d := startDaemon(t, withDrain(nil))
	k := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "fast only",
		"acls": []string{"api-key:endpoint:realtime", "api-key:endpoint:client-secrets", "api-key:model:svc-voice-fast-1.0"}}, 200)
	fast, fastID := k["apiKey"].(string), k["apiKeyId"].(string)

	// Minting: the stored model must be granted and known.
	status, m := secretOf(t, d, fast, map[string]any{"model": "svc-voice-latest"})
	require.Equal(t, 403, status, "%v", m)
	status, m = secretOf(t, d, fast, map[string]any{"model": "svc-voice-imaginary"})
	require.Equal(t, 400, status)
	require.Equal(t, "model_not_found", m["error"].(map[string]any)["code"])
	status, m = secretOf(t, d, fast, map[string]any{"model": "svc-voice-fast-1.0", "reasoning": map[string]any{"effort": "none"}})
	require.Equal(t, 400, status, "the fast model does not reason")
	require.Equal(t, "session.reasoning.effort", m["error"].(map[string]any)["param"])
	status, bound := secretOf(t, d, fast, map[string]any{"model": "svc-voice-fast-1.0"})
	require.Equal(t, 200, status)
	status, free := secretOf(t, d, fast, nil)
	require.Equal(t, 200, status)

	// Opening: ?model= narrows within the stored model and the creator's
	// permissions, never widens them.
	st, code, _ := openRealtime(t, d, "?model=svc-voice-latest", bound["value"].(string), true)
	require.Equal(t, 403, st)
	require.Equal(t, "permission_denied", code)
	st, _, _ = openRealtime(t, d, "", free["value"].(string), false)
	require.Equal(t, 403, st, "the default model is not granted to the creator")
	st, code, _ = openRealtime(t, d, "?model=nope", free["value"].(string), false)
	require.Equal(t, 400, st)
	require.Equal(t, "model_not_found", code)
	st, _, c := openRealtime(t, d, "?model=svc-voice-fast-1.0", free["value"].(string), true)
	require.Equal(t, 101, st)
	created := c.next(t, "session.created", 2*time.Second)["session"].(map[string]any)
	require.Equal(t, "svc-voice-fast-1.0", created["model"])
	require.Nil(t, created["reasoning"], "the fast model does not reason")
	c.next(t, "conversation.created", time.Second)

	// session.update cannot switch to a model the secret cannot use.
	for model, want := range map[string]string{"svc-voice-latest": "permission_denied", "gpt-nope": "model_not_found"} {
		c.send(t, map[string]any{"type": "session.update", "event_id": "u-" + model, "session": map[string]any{"model": model}})
		e := c.next(t, "error", 2*time.Second)["error"].(map[string]any)
		require.Equal(t, want, e["code"], model)
		require.Equal(t, "session.model", e["param"])
		require.Equal(t, "u-"+model, e["event_id"])
	}
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"reasoning": map[string]any{"effort": "high"}}})
	e := c.next(t, "error", 2*time.Second)["error"].(map[string]any)
	require.Equal(t, "session.reasoning.effort", e["param"])
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"instructions": "still fine"}})
	upd := c.next(t, "session.updated", 2*time.Second)["session"].(map[string]any)
	require.Equal(t, "svc-voice-fast-1.0", upd["model"])
	require.NoError(t, c.conn.Close())

	// The API key itself: same rules on ?model=.
	st, _, _ = openRealtime(t, d, "?model=svc-voice-latest", fast, false)
	require.Equal(t, 403, st)
	st, code, _ = openRealtime(t, d, "?model=svc-voice-x", fast, false)
	require.Equal(t, 400, st)
	require.Equal(t, "model_not_found", code)
	st, _, c = openRealtime(t, d, "?model=svc-voice-fast-1.0", fast, false)
	require.Equal(t, 101, st)
	require.NoError(t, c.conn.Close())

	// Narrowing the creator narrows its secrets at once.
	d.JSON(t, "PUT", "/auth/api-keys/"+fastID, d.OwnerKey, map[string]any{"fieldMask": "aclStrings",
		"apiKey": map[string]any{"aclStrings": []string{"api-key:endpoint:client-secrets", "api-key:model:svc-voice-fast-1.0"}}}, 200)
	st, _, _ = openRealtime(t, d, "", bound["value"].(string), true)
	require.Equal(t, 403, st, "the creator lost the realtime endpoint")

	// An endpoint-only key is refused: a key needs both permissions.
	eo := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "endpoints only",
		"acls": []string{"api-key:endpoint:*"}}, 200)["apiKey"].(string)
	st, _, _ = openRealtime(t, d, "", eo, false)
	require.Equal(t, 403, st)
	status, m = secretOf(t, d, eo, nil)
	require.Equal(t, 403, status)
	require.Contains(t, m["error"].(map[string]any)["message"], "model permission")
	d.JSON(t, "GET", "/v2/phone-numbers", eo, nil, 403)
}

// TestReasoningEffort: reasoning.effort is validated, stored with a
// secret, applied to the session and reported in session.created, on the
// query, in a secret's session and in session.update.
func TestReasoningEffort(t *testing.T) {
	d := startDaemon(t, withDrain(nil))
	key := d.OwnerKey
	effort := func(c *controller) any {
		s := c.next(t, "session.created", 2*time.Second)["session"].(map[string]any)
		r, _ := s["reasoning"].(map[string]any)
		return r["effort"]
	}
	st, _, c := openRealtime(t, d, "?reasoning.effort=none", key, false)
	require.Equal(t, 101, st)
	require.Equal(t, "none", effort(c))
	st, _, c = openRealtime(t, d, "?model=svc-voice-think-fast-1.0", key, false)
	require.Equal(t, 101, st)
	require.Equal(t, "high", effort(c), "high is the default")
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"reasoning": map[string]any{"effort": "none"}}})
	upd := c.next(t, "session.updated", 2*time.Second)["session"].(map[string]any)
	require.Equal(t, "none", upd["reasoning"].(map[string]any)["effort"])
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"reasoning": map[string]any{"effort": "max"}}})
	require.Equal(t, "session.reasoning.effort", c.next(t, "error", 2*time.Second)["error"].(map[string]any)["param"])

	for q, param := range map[string]string{"?reasoning.effort=max": "reasoning.effort", "?model=svc-voice-fast-1.0&reasoning.effort=high": "reasoning.effort"} {
		c, status, body := dialController(t, wsURL(d, q), bearer(key))
		require.Nil(t, c)
		require.Equal(t, 400, status, q)
		_, p, _ := apptest.ErrorOf(t, body)
		require.Equal(t, param, p, q)
	}

	status, sec := secretOf(t, d, key, map[string]any{"model": "svc-voice-latest", "reasoning": map[string]any{"effort": "none"}})
	require.Equal(t, 200, status)
	require.Equal(t, "none", sec["session"].(map[string]any)["reasoning"].(map[string]any)["effort"])
	st, _, c = openRealtime(t, d, "", sec["value"].(string), false)
	require.Equal(t, 101, st)
	require.Equal(t, "none", effort(c))
	st, _, _ = openRealtime(t, d, "?reasoning.effort=high", sec["value"].(string), false)
	require.Equal(t, 403, st, "a secret is bound to its stored effort")
	status, m := secretOf(t, d, key, map[string]any{"reasoning": map[string]any{"effort": "medium"}})
	require.Equal(t, 400, status)
	require.Equal(t, "session.reasoning.effort", m["error"].(map[string]any)["param"])
}

func decodeJSON(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "body: %s", raw)
	return m
}

// TestTeamModelsAndEndpoints: the two listings an ACL is written from.
func TestTeamModelsAndEndpoints(t *testing.T) {
	d := startDaemon(t, nil)
	m := d.JSON(t, "GET", "/auth/teams/default/models", d.OwnerKey, nil, 200)
	clusters := m["clusterConfigs"].([]any)
	require.Len(t, clusters, 1)
	reasons := map[string]bool{}
	for _, x := range clusters[0].(map[string]any)["languageModels"].([]any) {
		lm := x.(map[string]any)
		reasons[lm["name"].(string)] = lm["features"].(map[string]any)["reasoning"].(bool)
		require.Equal(t, "0", lm["tpm"])
		require.Contains(t, lm["outputModalities"], "AUDIO")
	}
	require.Equal(t, map[string]bool{"svc-voice-latest": true, "svc-voice-think-fast-1.0": true, "svc-voice-fast-1.0": false}, reasons)
	e := d.JSON(t, "GET", "/auth/teams/default/endpoints", d.OwnerKey, nil, 200)
	var names []string
	for _, x := range e["endpoints"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "realtime")
	require.Contains(t, names, "client-secrets")
	d.JSON(t, "GET", "/auth/teams/other/models", d.OwnerKey, nil, 404)
	d.JSON(t, "GET", "/auth/teams/other/endpoints", d.OwnerKey, nil, 404)
}
