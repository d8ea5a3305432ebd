// Package apptest starts a real appliance for tests: HTTP on a loopback
// port, SQLite on disk in a temporary data directory, logs captured so a
// test can search them.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app"
	"switchboard/config"
)

// Daemon is a running appliance.
type Daemon struct {
	URL      string
	OwnerKey string
	DataDir  string
	App      *app.App
	Logs     *SyncBuffer
	// Client sends Do's requests: one that trusts the daemon's certificate
	// when it serves HTTPS, else http.DefaultClient.
	Client *http.Client
	cancel context.CancelFunc
	done   chan error
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Config returns the configuration a test daemon starts from: defaults, a
// data directory under dir, every listener on a free loopback port.
func Config(t testing.TB, dir string, env map[string]string) *config.Config {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load([]string{"--data-dir", dir, "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug"}, getenv)
	require.NoError(t, err)
	return cfg
}

// Start runs a daemon on cfg (see Config) until the test ends.
func Start(t testing.TB, cfg *config.Config) *Daemon {
	t.Helper()
	logs := &SyncBuffer{}
	log := app.NewLogger(logs, cfg.LogLevel, "json")
	a, err := app.New(context.Background(), cfg, log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{URL: a.URL(), DataDir: cfg.DataDir, App: a, Logs: logs, cancel: cancel, done: make(chan error, 1)}
	if cfg.Keys.AdminKey != "" {
		d.OwnerKey = cfg.Keys.AdminKey
	} else if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "owner.key")); err == nil {
		d.OwnerKey = strings.TrimSpace(string(b))
	}
	d.Client = http.DefaultClient
	if cfg.HTTP.TLSCert != "" {
		d.Client = TrustingClient(t, cfg.HTTP.TLSCert)
	}
	go func() { d.done <- a.Run(ctx) }()
	t.Cleanup(func() { d.Stop(t) })
	return d
}

// Stop stops the daemon and waits for it; it is safe to call twice.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not stop within 15s")
	}
}

// Do sends a request with key as bearer token and a JSON body (unless nil
// or a string, which is sent raw) and returns the status, headers and body.
func (d *Daemon) Do(t testing.TB, method, path, key string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, d.URL+path, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, raw
}

// JSON sends like Do, requires the status and decodes the body.
func (d *Daemon) JSON(t testing.TB, method, path, key string, body any, want int) map[string]any {
	t.Helper()
	status, _, raw := d.Do(t, method, path, key, body)
	require.Equal(t, want, status, "body: %s", raw)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "body: %s", raw)
	return m
}

// ErrorOf decodes an error body and returns code and param.
func ErrorOf(t testing.TB, raw []byte) (code, param, message string) {
	t.Helper()
	var eb struct {
		Error struct{ Code, Param, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &eb), "body: %s", raw)
	require.NotEmpty(t, eb.Error.Code, "not an error body: %s", raw)
	return eb.Error.Code, eb.Error.Param, eb.Error.Message
}

// FilesContain reports whether any file under dir holds needle.
func FilesContain(t testing.TB, dir, needle string) []string {
	t.Helper()
	var hits []string
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, p)
		}
		return nil
	}))
	return hits
}
