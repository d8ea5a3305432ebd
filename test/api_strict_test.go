package test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// TestStrictJSONBodies: through the real daemon, a body in another charset
// is a 415 and a duplicate key a 400 naming it, both in the JSON error
// shape, and nothing is created.
func TestStrictJSONBodies(t *testing.T) {
	d := startDaemon(t, nil)
	post := func(ctype, body string) (int, []byte) {
		req, err := http.NewRequest("POST", d.URL+"/v1/agents", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+d.OwnerKey)
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, []byte(b.String())
	}
	st, raw := post("application/json; charset=windows-1252", `{"name":"caf\xe9"}`)
	require.Equal(t, 415, st, "%s", raw)
	code, param, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "unsupported_media_type", code)
	require.Equal(t, "Content-Type", param)

	st, raw = post("application/json", `{"name":"a","instructions":"be kind","name":"b"}`)
	require.Equal(t, 400, st, "%s", raw)
	_, param, _ = apptest.ErrorOf(t, raw)
	require.Equal(t, "name", param)

	st, raw = post("application/json", "{\"name\":\"caf\xe9\"}")
	require.Equal(t, 400, st, "%s", raw)

	list := d.JSON(t, "GET", "/v1/agents", d.OwnerKey, nil, 200)
	for _, a := range list["agents"].([]any) {
		require.NotEqual(t, "b", a.(map[string]any)["name"], "a refused body created nothing")
	}
}
