package test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cli runs the built binary against a daemon and returns stdout, stderr
// and the exit code.
func cli(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

func cliJSON(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	out, errs, code := cli(t, env, append(args, "--json")...)
	require.Equal(t, 0, code, "stderr: %s", errs)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

func TestCLIKeysAndAudit(t *testing.T) {
	d := startDaemon(t, nil)
	// The owner key file is found through the data directory.
	env := []string{"SWITCHBOARD_URL=" + d.URL, "SWITCHBOARD_DATA_DIR=" + d.DataDir}

	k := cliJSON(t, env, "keys", "create", "--name", "ci", "--acl", "api-key:endpoint:phone-numbers", "--acl", "api-key:model:*", "--qpm", "60")
	id, secret := k["apiKeyId"].(string), k["apiKey"].(string)
	require.NotEmpty(t, secret)

	out, _, code := cli(t, env, "keys", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, id)
	require.Contains(t, out, "NAME")
	require.NotContains(t, out, secret, "a listing never shows a secret")

	// The table form of create shows the secret once.
	out, _, code = cli(t, env, "keys", "create", "--name", "table")
	require.Equal(t, 0, code)
	require.Contains(t, out, "shown once")

	// The new key works with SWITCHBOARD_API_KEY but cannot manage keys.
	keyEnv := []string{"SWITCHBOARD_URL=" + d.URL, "SWITCHBOARD_API_KEY=" + secret}
	_, errs, code := cli(t, keyEnv, "keys", "list")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "403")
	require.Contains(t, errs, "management key")

	r := cliJSON(t, env, "keys", "rotate", id, "--old-expire", "1h")
	require.NotEqual(t, secret, r["apiKey"])
	require.NotEmpty(t, r["oldSecretExpireTime"])

	_, _, code = cli(t, env, "keys", "disable", id)
	require.Equal(t, 0, code)
	out, _, _ = cli(t, env, "keys", "list", "--active-only")
	require.NotContains(t, out, id)
	_, _, code = cli(t, env, "keys", "delete", id)
	require.Equal(t, 0, code)
	_, errs, code = cli(t, env, "keys", "delete", id)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "404")

	// Bad input: the server's message, a non-zero status.
	_, errs, code = cli(t, env, "keys", "create", "--name", "x", "--acl", "bogus")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "param acls[0]")

	out, _, code = cli(t, env, "audit", "--query", "ci")
	require.Equal(t, 0, code)
	for _, a := range []string{"api_key.create", "api_key.rotate", "api_key.update", "api_key.delete"} {
		require.Contains(t, out, a)
	}
	a := cliJSON(t, env, "audit", "--limit", "1")
	require.Len(t, a["events"], 1)

	// No daemon: a clear error.
	_, errs, code = cli(t, []string{"SWITCHBOARD_URL=http://127.0.0.1:1", "SWITCHBOARD_API_KEY=x"}, "keys", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "cannot reach the daemon")
	// No key at all.
	_, errs, code = cli(t, []string{"SWITCHBOARD_URL=" + d.URL, "SWITCHBOARD_DATA_DIR=" + t.TempDir()}, "keys", "list")
	require.Equal(t, 1, code)
	require.True(t, strings.Contains(errs, "SWITCHBOARD_API_KEY"), errs)
}
