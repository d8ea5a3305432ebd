package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/sip"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(nil, env(nil))
	require.NoError(t, err)
	require.Equal(t, "./var", c.DataDir)
	require.Equal(t, "127.0.0.1:8080", c.HTTPAddr)
	require.Equal(t, "127.0.0.1:5060", c.SIP.Addr)
	require.Equal(t, PortRange{20000, 20999}, c.RTP.Ports)
	require.Equal(t, 24*time.Hour, c.Keys.RotationGrace)
	// The table's default is the SIP server's.
	require.Equal(t, sip.DefaultForwardHeaders, c.SIP.ForwardHeaders)
}

// TestPrecedence checks file < environment < flags for one setting of each
// kind.
func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(file, []byte("data_dir: /from/file\nhttp_addr: 127.0.0.1:1111\nsip:\n  addr: 127.0.0.1:5070\n  max_calls: 7\nrtp:\n  ports: 30000-30099\n"), 0o600))

	c, err := Load([]string{"--config", file}, env(nil))
	require.NoError(t, err)
	require.Equal(t, "/from/file", c.DataDir)
	require.Equal(t, 7, c.SIP.MaxCalls)
	require.Equal(t, PortRange{30000, 30099}, c.RTP.Ports)

	c, err = Load([]string{"--config", file}, env(map[string]string{"SWITCHBOARD_DATA_DIR": "/from/env", "SWITCHBOARD_MAX_CALLS": "9"}))
	require.NoError(t, err)
	require.Equal(t, "/from/env", c.DataDir)
	require.Equal(t, 9, c.SIP.MaxCalls)
	require.Equal(t, "127.0.0.1:1111", c.HTTPAddr)

	c, err = Load([]string{"--config", file, "--data-dir", "/from/flag", "--max-calls", "11"},
		env(map[string]string{"SWITCHBOARD_DATA_DIR": "/from/env", "SWITCHBOARD_CONFIG": "/ignored"}))
	require.NoError(t, err)
	require.Equal(t, "/from/flag", c.DataDir)
	require.Equal(t, 11, c.SIP.MaxCalls)

	// SWITCHBOARD_CONFIG names the file when --config is absent.
	c, err = Load(nil, env(map[string]string{"SWITCHBOARD_CONFIG": file}))
	require.NoError(t, err)
	require.Equal(t, "/from/file", c.DataDir)
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("no_such_key: 1\n"), 0o600))
	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, err := Load([]string{"--config", empty}, env(nil))
	require.NoError(t, err, "an empty file is fine")

	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--config", bad}, nil, "no_such_key"},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, nil, "read config"},
		{[]string{"--rtp-ports", "20000"}, nil, "min-max"},
		{[]string{"--rtp-ports", "30000-20000"}, nil, "min <= max"},
		{[]string{"--max-calls", "lots"}, nil, "not an integer"},
		{nil, map[string]string{"SWITCHBOARD_MEDIA_TIMEOUT": "soon"}, "SWITCHBOARD_MEDIA_TIMEOUT"},
		{[]string{"--http-addr", "nohost"}, nil, "http_addr"},
		{nil, map[string]string{"SWITCHBOARD_SIP_CHALLENGE_STATUS": "403"}, "challenge_status"},
		{nil, map[string]string{"SWITCHBOARD_UPSTREAM_SESSION_FIELDS": "both"}, "upstream.session_fields"},
		{nil, map[string]string{"SWITCHBOARD_DTMF_IDLE_TIMEOUT": "0s"}, "dtmf.idle_timeout: must be positive"},
		{[]string{"--bogus"}, nil, "bogus"},
		{[]string{"extra"}, nil, "unexpected argument"},
	}
	for _, c := range cases {
		_, err := Load(c.args, env(c.env))
		require.Error(t, err, "%v %v", c.args, c.env)
		require.Contains(t, err.Error(), c.want)
	}
}

// TestDocsDocumentEverySetting keeps the table in docs/configuration.md in
// step with the settings table.
func TestDocsDocumentEverySetting(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	require.NoError(t, err)
	doc := string(b)
	require.Contains(t, doc, strings.TrimSpace(Markdown()), "docs/configuration.md's settings table is stale: paste the output of `switchboard config`")
}

// TestFleetNeedsSharedSecrets: a node on a shared database refuses to start
// without the secrets every node must share, and a bad cluster timing.
func TestFleetNeedsSharedSecrets(t *testing.T) {
	full := map[string]string{
		"SWITCHBOARD_DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db", "SWITCHBOARD_CLUSTER_SECRET": "0123456789abcdef",
		"SWITCHBOARD_SECRET_KEY": strings.Repeat("ab", 32), "SWITCHBOARD_TOOLS_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3",
	}
	c, err := Load(nil, env(full))
	require.NoError(t, err)
	require.True(t, c.Fleet())
	for _, name := range []string{"SWITCHBOARD_CLUSTER_SECRET", "SWITCHBOARD_SECRET_KEY", "SWITCHBOARD_TOOLS_SECRET"} {
		e := map[string]string{}
		for k, v := range full {
			if k != name {
				e[k] = v
			}
		}
		_, err := Load(nil, env(e))
		require.Error(t, err, name)
		require.Contains(t, err.Error(), name)
	}
	_, err = Load([]string{"--database-url", "mysql://x"}, env(nil))
	require.ErrorContains(t, err, "database_url")
	full["SWITCHBOARD_CLUSTER_NODE_TIMEOUT"] = "1s"
	_, err = Load(nil, env(full))
	require.ErrorContains(t, err, "node_timeout")
	c, err = Load(nil, env(nil))
	require.NoError(t, err)
	require.False(t, c.Fleet(), "SQLite is one node")
}

// TestPprofAddrLoopbackOnly: the profiler listens on loopback or not at
// all; any other address is refused at load.
func TestPprofAddrLoopbackOnly(t *testing.T) {
	c, err := Load(nil, env(nil))
	require.NoError(t, err)
	require.Empty(t, c.PprofAddr, "off by default")
	for _, ok := range []string{"127.0.0.1:6060", "[::1]:6060", "localhost:0", "127.0.0.2:1"} {
		c, err := Load([]string{"--pprof-addr", ok}, env(nil))
		require.NoError(t, err, ok)
		require.Equal(t, ok, c.PprofAddr)
	}
	for _, bad := range []string{"0.0.0.0:6060", ":6060", "[::]:6060", "192.0.2.1:6060", "example.com:6060", "127.0.0.1"} {
		_, err := Load(nil, env(map[string]string{"SWITCHBOARD_PPROF_ADDR": bad}))
		require.ErrorContains(t, err, "pprof_addr", bad)
	}
}
