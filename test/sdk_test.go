package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
)

// sdkDir holds the pinned official npm clients (package.json and
// package-lock.json; node_modules is installed by make deps or here).
const sdkDir = "sdk"

var (
	sdkOnce sync.Once
	sdkErr  error
)

// requireSDKs fails the test when Node.js or npm is missing (make deps
// installs them) and installs the locked npm packages when node_modules
// is missing or older than the lock file.
func requireSDKs(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (Debian packages nodejs and npm; make deps installs them)", tool)
	}
	out, err := exec.Command("node", "--version").Output()
	require.NoError(t, err)
	var major int
	_, err = fmt.Sscanf(strings.TrimSpace(string(out)), "v%d", &major)
	require.NoError(t, err, "node --version: %s", out)
	require.GreaterOrEqual(t, major, 18, "the pinned SDKs need Node.js 18 or later, found %s", out)
	sdkOnce.Do(func() {
		// Another go test process may be installing too: one at a time.
		lf, err := os.OpenFile(filepath.Join(sdkDir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			sdkErr = err
			return
		}
		defer lf.Close()
		if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
			sdkErr = err
			return
		}
		lock, err := os.Stat(filepath.Join(sdkDir, "package-lock.json"))
		if err != nil {
			sdkErr = err
			return
		}
		if inst, err := os.Stat(filepath.Join(sdkDir, "node_modules", ".package-lock.json")); err == nil && !inst.ModTime().Before(lock.ModTime()) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = sdkDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			sdkErr = fmt.Errorf("%w: %s", err, out)
		}
	})
	require.NoError(t, sdkErr, "npm ci in test/sdk")
}

// tlsDaemon starts an appliance that serves HTTPS with a self-signed
// certificate; it returns the daemon and the certificate file.
func tlsDaemon(t *testing.T, env map[string]string) (*apptest.Daemon, string) {
	t.Helper()
	dir := t.TempDir()
	cert, key := apptest.SelfSigned(t, dir, "switchboard-test")
	all := withOwnRTP(t, withDrain(env))
	all["SWITCHBOARD_HTTP_TLS_CERT"], all["SWITCHBOARD_HTTP_TLS_KEY"] = cert, key
	d := apptest.Start(t, apptest.Config(t, filepath.Join(dir, "data"), all))
	require.True(t, strings.HasPrefix(d.URL, "https://"))
	return d, cert
}

// runSDK runs one scenario of test/sdk/run.mjs against d and returns the
// JSON line it printed.
func runSDK(t *testing.T, d *apptest.Daemon, cert, key, scenario string, extra ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs", scenario)
	cmd.Dir = sdkDir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "NODE_EXTRA_CA_CERTS=" + cert,
		"SB_URL=" + d.URL, "SB_KEY=" + key}, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	require.NoError(t, err, "node run.mjs %s:\n%s\n%s", scenario, stdout.String(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res), "stdout: %s", stdout.String())
	require.Equal(t, true, res["ok"])
	t.Logf("%s in %s: %s", scenario, time.Since(start).Round(time.Millisecond), lines[len(lines)-1])
	return res
}

// sdkKey makes an API key scoped the way a customer's server key is.
func sdkKey(t *testing.T, d *apptest.Daemon, acls ...string) string {
	t.Helper()
	k := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "sdk", "acls": acls}, 200)
	return k["apiKey"].(string)
}

// TestOfficialSDKs drives the official npm clients (openai, and the
// Agents SDK @openai/agents-realtime), pinned in test/sdk, against the
// appliance over HTTPS/WSS with a self-signed certificate: a client
// secret and a voice turn with the echo engine, a RealtimeSession with a
// function tool, and a browser-style client that authenticates by
// subprotocol only.
func TestOfficialSDKs(t *testing.T) {
	t.Parallel()
	requireSDKs(t)
	d, cert := tlsDaemon(t, nil)
	key := sdkKey(t, d, "api-key:endpoint:realtime", "api-key:endpoint:client-secrets", "api-key:model:*")

	t.Run("openai client secret and voice turn", func(t *testing.T) {
		res := runSDK(t, d, cert, key, "openai-turn")
		require.Equal(t, "svc-voice-fast-1.0", res["model"])
		// The echo engine answers with the caller's own turn: 0.8 s of
		// tone plus its prefix padding and trailing silence, at 24 kHz.
		require.Greater(t, res["audioBytes"].(float64), 0.8*48000)
	})
	t.Run("agents RealtimeSession with a function tool", func(t *testing.T) {
		res := runSDK(t, d, cert, key, "agents-session")
		require.Greater(t, res["audioBytes"].(float64), 0.8*48000)
	})
	t.Run("browser-style subprotocol", func(t *testing.T) {
		runSDK(t, d, cert, key, "browser")
	})
}

// TestOfficialSDKSideband: a phone call to a webhook-routed number; the
// openai SDK opens its sideband connection with the call's callID, steers
// the session, sees the caller's turn, and hangs up through the SDK.
func TestOfficialSDKSideband(t *testing.T) {
	t.Parallel()
	requireSDKs(t)
	const number = "+14155550171"
	h := newHookReceiver(t, 0)
	dir := t.TempDir()
	cert, tlsKey := apptest.SelfSigned(t, dir, "switchboard-test")
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s",
		"SWITCHBOARD_HTTP_TLS_CERT": cert, "SWITCHBOARD_HTTP_TLS_KEY": tlsKey}, h, number)
	key := sdkKey(t, d, "api-key:endpoint:realtime", "api-key:endpoint:calls", "api-key:model:*")
	run := startSipp(t, d, number, sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
	res := runSDK(t, d, cert, key, "sideband", "SB_CALL_ID="+id)
	require.Contains(t, res["close"].(map[string]any)["reason"], "hung up by the API")
	run.wait(t, 10*time.Second)
	end := h.next(t, "realtime.call.ended", 5*time.Second)
	require.Equal(t, id, end.Data["call_id"])
}

// TestOfficialSDKAcceptReject: the hosted SIP flow with the openai SDK
// and sipp as the caller. A call to a webhook number is accepted with
// client.realtime.calls.accept (model, instructions, voice, tools, audio
// formats, an idle timer): it is answered with no controller socket; a
// sideband controller then attaches and finds that session in force, one
// conversation.created, the caller heard and the idle timer firing. Two
// more calls are refused with client.realtime.calls.reject: 486 Busy Here
// as asked, and 603 Decline by default, each checked by sipp.
func TestOfficialSDKAcceptReject(t *testing.T) {
	t.Parallel()
	requireSDKs(t)
	const number = "+14155550172"
	h := newHookReceiver(t, 0)
	dir := t.TempDir()
	cert, tlsKey := apptest.SelfSigned(t, dir, "switchboard-test")
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "15s",
		"SWITCHBOARD_HTTP_TLS_CERT": cert, "SWITCHBOARD_HTTP_TLS_KEY": tlsKey}, h, number)
	key := sdkKey(t, d, "api-key:endpoint:realtime", "api-key:endpoint:calls", "api-key:model:*")

	t.Run("accept", func(t *testing.T) {
		run := startSipp(t, d, number, sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
		id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
		runSDK(t, d, cert, key, "accept", "SB_CALL_ID="+id)
		// Answered by the accept alone: no controller has attached.
		t.Logf("active %s after the accept returned", waitState(t, d, id, call.StateActive, 5*time.Second))
		res := runSDK(t, d, cert, key, "attach-accepted", "SB_CALL_ID="+id)
		require.Contains(t, res["close"].(map[string]any)["reason"], "hung up by the API")
		run.wait(t, 15*time.Second)
		end := h.next(t, "realtime.call.ended", 5*time.Second)
		require.Equal(t, id, end.Data["call_id"])
		require.Equal(t, "controller", end.Data["ended_by"])
	})
	for _, tc := range []struct{ status, reason, asked string }{
		{"486", "Busy Here", "486"},
		{"603", "Decline", ""},
	} {
		t.Run("reject "+tc.status, func(t *testing.T) {
			run := startSipp(t, d, number, sippControl{Reject: tc.status, RejectReason: tc.reason}, 1, 1)
			id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
			env := []string{"SB_CALL_ID=" + id}
			if tc.asked != "" {
				env = append(env, "SB_STATUS="+tc.asked)
			}
			runSDK(t, d, cert, key, "reject", env...)
			run.wait(t, 10*time.Second)
			end := h.next(t, "realtime.call.ended", 5*time.Second)
			require.Equal(t, id, end.Data["call_id"])
			require.Equal(t, "controller", end.Data["ended_by"])
		})
	}
}

// waitState waits until call id is in state st and says how long that
// took.
func waitState(t *testing.T, d *apptest.Daemon, id string, st call.State, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	// Polls the call's state: the SDK's side has no event for it.
	require.Eventually(t, func() bool {
		c, ok := d.App.Calls().Get(id)
		return ok && c.Snapshot().State == st
	}, within, 20*time.Millisecond, "call %s not %s within %s", id, st, within)
	return time.Since(start).Round(time.Millisecond)
}
