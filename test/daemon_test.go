package test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/app"
	"switchboard/app/apptest"
)

func startDaemon(t *testing.T, env map[string]string) *apptest.Daemon {
	t.Helper()
	return apptest.Start(t, apptest.Config(t, t.TempDir(), env))
}

func TestRestartLosesNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := apptest.Config(t, dir, nil)
	d := apptest.Start(t, cfg)
	owner := d.OwnerKey
	k := d.JSON(t, "POST", "/auth/teams/default/api-keys", owner, map[string]any{"name": "survivor", "acls": []string{"api-key:endpoint:*"}}, 200)
	secret := k["apiKey"].(string)
	d.Stop(t)

	// Same data directory, new process state: the owner key file is kept,
	// not regenerated, and every key still works.
	before, err := os.ReadFile(filepath.Join(dir, "owner.key"))
	require.NoError(t, err)
	d2 := apptest.Start(t, apptest.Config(t, dir, nil))
	after, err := os.ReadFile(filepath.Join(dir, "owner.key"))
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Empty(t, d2.App.OwnerKeyFile, "no new owner key on restart")
	d2.JSON(t, "GET", "/v1/api-key", secret, nil, 200)
	d2.JSON(t, "GET", "/v1/api-key", owner, nil, 200)
	evs := d2.JSON(t, "GET", "/audit/teams/default/events", owner, nil, 200)
	require.GreaterOrEqual(t, len(evs["events"].([]any)), 2)
}

func TestAdminKeyFromEnvironment(t *testing.T) {
	admin := "admin-key-for-tests-0123456789"
	d := startDaemon(t, map[string]string{"SWITCHBOARD_ADMIN_KEY": admin})
	require.Empty(t, d.App.OwnerKeyFile)
	_, err := os.Stat(filepath.Join(d.DataDir, "owner.key"))
	require.True(t, os.IsNotExist(err), "no owner key file when SWITCHBOARD_ADMIN_KEY is set")
	d.JSON(t, "GET", "/auth/teams/default/api-keys", admin, nil, 200)
}

func TestHealthAndReadiness(t *testing.T) {
	d := startDaemon(t, nil)
	require.Equal(t, "ok", d.JSON(t, "GET", "/healthz", "", nil, 200)["status"])
	require.Equal(t, "ready", d.JSON(t, "GET", "/readyz", "", nil, 200)["status"])
	st, _, raw := d.Do(t, "GET", "/metrics", "", nil)
	require.Equal(t, 200, st)
	require.Contains(t, string(raw), "go_goroutines")
}

// TestNoSecretAtRest creates every kind of secret the appliance keeps and
// searches the data directory and the logs for the plaintext.
func TestNoSecretAtRest(t *testing.T) {
	d := startDaemon(t, nil)
	k := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "x", "acls": []string{"api-key:endpoint:*"}}, 200)
	secret := k["apiKey"].(string)
	r := d.JSON(t, "POST", "/auth/api-keys/"+k["apiKeyId"].(string)+"/rotate", d.OwnerKey, map[string]any{}, 200)
	rotated := r["apiKey"].(string)
	d.JSON(t, "GET", "/v1/api-key", rotated, nil, 200)
	d.Stop(t)
	for _, s := range []string{secret, rotated} {
		require.Empty(t, apptest.FilesContain(t, d.DataDir, s), "secret found at rest")
		require.NotContains(t, d.Logs.String(), s, "secret found in logs")
	}
	// The owner key is only in its own 0600 file.
	hits := apptest.FilesContain(t, d.DataDir, d.OwnerKey)
	require.Equal(t, []string{filepath.Join(d.DataDir, "owner.key")}, hits)
	require.NotContains(t, d.Logs.String(), d.OwnerKey)
	for _, f := range []string{"owner.key", "master.key", "switchboard.db"} {
		info, err := os.Stat(filepath.Join(d.DataDir, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}
}

// TestServeStopsOnSIGTERM runs the built binary the way an operator does
// and checks it logs where the owner key is and exits 0 on SIGTERM.
func TestServeStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "serve", "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = []string{"SWITCHBOARD_DATA_DIR=" + filepath.Join(dir, "data")}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	var addr, keyPath string
	deadline := time.After(20 * time.Second)
	for addr == "" {
		select {
		case m, ok := <-lines:
			require.True(t, ok, "daemon exited early")
			if p, ok := m["path"].(string); ok && strings.HasSuffix(p, "owner.key") {
				keyPath = p
			}
			if a, ok := m["http_addr"].(string); ok && m["message"] == "switchboard is serving" {
				addr = a
			}
		case <-deadline:
			t.Fatal("daemon did not start")
		}
	}
	require.Equal(t, filepath.Join(dir, "data", "owner.key"), keyPath)
	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() {
		for range lines {
		}
		done <- cmd.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "serve must exit 0 on SIGTERM")
	case <-ctx.Done():
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// TestStartFailsCleanly: a port that is taken is a clear error, and what
// was opened before is released (the store can be opened again).
func TestStartFailsCleanly(t *testing.T) {
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := t.TempDir()
	cfg := apptest.Config(t, dir, nil)
	cfg.SIP.Addr = ln.LocalAddr().String()
	_, err = app.New(context.Background(), cfg, zerolog.Nop())
	require.Error(t, err)
	require.Contains(t, err.Error(), "sip")
	d := apptest.Start(t, apptest.Config(t, dir, nil))
	d.JSON(t, "GET", "/healthz", "", nil, 200)
}
