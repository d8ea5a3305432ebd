package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"net/http/httptest"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/api"
	"switchboard/auth"
	"switchboard/numbers"
	"switchboard/store"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// binaryPath builds the switchboard binary once per test run.
func binaryPath(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-cli")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "switchboard")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	require.NoError(t, buildErr, "go build: %s", builtBin)
	return builtBin
}

// cliDaemon serves the keys, numbers and agents modules over an on-disk
// store with the real key service, master-key box and owner key, and
// returns the environment that points the CLI at it.
func cliDaemon(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.OpenSQLite(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	box, _, err := auth.LoadOrCreateMasterKey(dir, "")
	require.NoError(t, err)
	keys := auth.NewKeyService(st)
	_, err = keys.Bootstrap(ctx, dir, "default", "")
	require.NoError(t, err)
	nums := numbers.NewService(st, numbers.Options{SIPHost: "sip.test.invalid", Pool: []string{"+12125550100"}, Sealer: box,
		NewWebhookSecret: auth.NewWebhookSecret})
	srv := api.New(zerolog.Nop(), keys, []api.Module{keys, nums, agent.NewService(st, agent.Options{})})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return []string{"SWITCHBOARD_URL=" + hs.URL, "SWITCHBOARD_DATA_DIR=" + dir}
}

// sb runs the built binary and returns stdout, stderr and the exit code.
func sb(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binaryPath(t), args...)
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

// sbJSON runs a command with --json that must succeed.
func sbJSON(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	out, errs, code := sb(t, env, append(args, "--json")...)
	require.Equal(t, 0, code, "stderr: %s", errs)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

// sbFails runs a command that must fail and returns its stderr.
func sbFails(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errs, code := sb(t, env, args...)
	require.NotEqual(t, 0, code, "stdout: %s", out)
	require.Empty(t, out)
	return errs
}

func TestCLINumbers(t *testing.T) {
	env := cliDaemon(t)
	ag := sbJSON(t, env, "agents", "create", "--name", "Desk")["agent_id"].(string)

	out, errs, code := sb(t, env, "numbers", "create", "--name", "Sales", "--number", "+1 415 555 0100", "--agent", ag,
		"--allow", "10.0.0.0/8", "--allow", "192.0.2.1")
	require.Equal(t, 0, code, errs)
	for _, s := range []string{"NUMBER", "+14155550100", "Sales", "byo_trunk", "agent " + ag + " (Desk)", "10.0.0.0/8 192.0.2.1/32", "sip.test.invalid"} {
		require.Contains(t, out, s)
	}
	require.NotContains(t, out, "shown once", "no webhook, no secret")

	const password = "cli-digest-password-1"
	pwFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte(password+"\n"), 0o600))
	out, errs, code = sb(t, env, "numbers", "create", "--name", "Hook", "--number", "+14155550101",
		"--webhook-url", "https://app.example/calls", "--auth-username", "pbx", "--auth-password-file", pwFile)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "shown once")
	require.Contains(t, out, "digest pbx")
	i := strings.Index(out, "whsec_")
	require.Positive(t, i, out)
	secret := strings.TrimSpace(out[i:])

	list := sbJSON(t, env, "numbers", "list")
	require.Len(t, list["phone_numbers"], 2)
	out, _, code = sb(t, env, "numbers", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "webhook https://app.example/calls")
	for _, o := range []string{out, mustJSON(t, list)} {
		require.NotContains(t, o, password)
		require.NotContains(t, o, secret)
	}
	hookNum := list["phone_numbers"].([]any)[1].(map[string]any)
	id := hookNum["phone_number_id"].(string)
	got := sbJSON(t, env, "numbers", "get", id)
	require.Equal(t, hookNum, got)

	// Errors carry the server's status, message and field; exit status 1.
	errs = sbFails(t, env, "numbers", "create", "--name", "Dup", "--number", "+14155550101")
	require.Contains(t, errs, "409")
	require.Contains(t, errs, "param phone_number")
	errs = sbFails(t, env, "numbers", "update", id, "--agent", ag)
	require.Contains(t, errs, "400")
	require.Contains(t, errs, "param agent_id")
	errs = sbFails(t, env, "numbers", "create", "--name", "Bad", "--number", "+14155550102", "--allow", "nope")
	require.Contains(t, errs, "sip_auth.allowed_addresses[0]")

	// Switch routes: the webhook goes, the agent comes; then a new webhook
	// shows its new secret once.
	up := sbJSON(t, env, "numbers", "update", id, "--no-webhook", "--agent", ag, "--name", "Hook 2", "--no-digest")
	n := up["phone_number"].(map[string]any)
	require.Equal(t, ag, n["agent_id"])
	require.Equal(t, "Hook 2", n["name"])
	require.NotContains(t, n["sip_auth"], "auth_username")
	require.NotContains(t, up, "webhook")
	up = sbJSON(t, env, "numbers", "update", "--no-agent", "--webhook-url", "https://two.example/h", id)
	require.NotEqual(t, secret, up["webhook"].(map[string]any)["dispatch_signing_secret"])

	// A provisioned number comes from the pool.
	prov := sbJSON(t, env, "numbers", "create", "--name", "Pool", "--area-code", "212")
	require.Equal(t, "+12125550100", prov["phone_number"].(map[string]any)["phone_number"])
	errs = sbFails(t, env, "numbers", "create", "--name", "Pool 2")
	require.Contains(t, errs, "pool_exhausted")

	// The agent cannot go while a number routes to it.
	errs = sbFails(t, env, "agents", "delete", ag)
	require.Contains(t, errs, "409")

	out, _, code = sb(t, env, "numbers", "delete", id)
	require.Equal(t, 0, code)
	require.Contains(t, out, "deleted phone number "+id)
	errs = sbFails(t, env, "numbers", "get", id)
	require.Contains(t, errs, "404")

	// Usage errors and a missing key fail without calling the daemon.
	require.Contains(t, sbFails(t, env, "numbers"), "create|delete|get|list|update")
	require.Contains(t, sbFails(t, env, "numbers", "update", id), "nothing to change")
	require.Contains(t, sbFails(t, env, "numbers", "get"), "phone number id")
	require.Contains(t, sbFails(t, []string{"SWITCHBOARD_URL=http://127.0.0.1:1", "SWITCHBOARD_DATA_DIR=" + t.TempDir()}, "numbers", "list"), "no API key")
	require.Contains(t, sbFails(t, append(env[:1:1], "SWITCHBOARD_API_KEY=wrong-key-0123456789"), "numbers", "list"), "401")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
