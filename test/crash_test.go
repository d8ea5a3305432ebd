package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// binaryDaemon is the built switchboard binary serving on loopback.
type binaryDaemon struct {
	cmd      *exec.Cmd
	url      string
	sip      netip.AddrPort
	ownerKey string
	exited   chan struct{}
}

// startBinary runs `switchboard serve` on dataDir with env and waits until
// it serves.
func startBinary(t *testing.T, dataDir string, env ...string) *binaryDaemon {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0", "--log-format", "json",
		"--rtp-ports", takePorts(t, 100).String())
	cmd.Env = append([]string{"SWITCHBOARD_DATA_DIR=" + dataDir}, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	d := &binaryDaemon{cmd: cmd, exited: make(chan struct{})}
	served := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == "switchboard is serving" {
				served <- m
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() { d.kill() })
	select {
	case m := <-served:
		d.url = "http://" + m["http_addr"].(string)
		d.sip = netip.MustParseAddrPort(m["sip_addr"].(string))
	case <-d.exited:
		t.Fatal("daemon exited before serving")
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not start")
	}
	key, err := os.ReadFile(filepath.Join(dataDir, "owner.key"))
	require.NoError(t, err)
	d.ownerKey = strings.TrimSpace(string(key))
	return d
}

// kill SIGKILLs the daemon and waits for it to be gone.
func (d *binaryDaemon) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// metrics reads the daemon's /metrics.
func (d *binaryDaemon) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(d.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return parseMetrics(string(raw))
}

// calls lists /v1/calls with query q.
func (d *binaryDaemon) calls(t *testing.T, q string) []map[string]any {
	t.Helper()
	req, err := http.NewRequest("GET", d.url+"/v1/calls"+q, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+d.ownerKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "%s", raw)
	var out struct {
		Calls []map[string]any `json:"calls"`
	}
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return out.Calls
}

// TestCrashLeavesRecords: calls in progress when the process is killed
// (SIGKILL: no drain, no deferred write) are stored from their admission;
// the next start closes their records as ended_by "crash" at the last time
// each was known to be up, and a call that ended before keeps its own end.
func TestCrashLeavesRecords(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	d := startBinary(t, dataDir, "SWITCHBOARD_RECORDS_ALIVE_INTERVAL=1s")

	// One short call that ends normally, then three long ones.
	short := pcmaCall("before-crash", 200)
	runSipp(t, d.sip, render(t, "call.xml.tmpl", short), demoNumber).requireOK(t)
	long := pcmaCall("crash", 200)
	long.PauseMs = 60000
	const calls = 3
	sipp := exec.Command("sipp", d.sip.String(), "-sf", render(t, "call.xml.tmpl", long), "-s", demoNumber,
		"-m", fmt.Sprint(calls), "-l", fmt.Sprint(calls), "-r", "10", "-i", "127.0.0.1",
		"-p", fmt.Sprint(freeUDPPort(t)), "-mp", fmt.Sprint(freeUDPPort(t)), "-t", "u1", "-nostdin", "-timeout", "90s")
	sipp.Dir = t.TempDir()
	require.NoError(t, sipp.Start())
	t.Cleanup(func() { sipp.Process.Kill(); sipp.Wait() })

	require.Eventually(t, func() bool { return len(d.calls(t, "?state=active")) == calls }, 20*time.Second, 50*time.Millisecond,
		"the calls were not answered")
	// Past two alive marks, so that the last known time is later than the
	// answer (a separate process: its marks go by its real clock into its
	// own database, which nothing outside reads while it runs).
	time.Sleep(2500 * time.Millisecond)
	d.kill()
	killed := time.Now()

	d2 := startBinary(t, dataDir)
	all := d2.calls(t, "")
	require.Len(t, all, calls+1, "every call has a record: none lost, none twice")
	crashed := 0
	for _, c := range all {
		require.Equal(t, "ended", c["state"], "no record stays open: %v", c)
		require.NotNil(t, c["ended_at"])
		if c["ended_by"] != "crash" {
			require.Equal(t, "caller", c["ended_by"], "the short call keeps its own end: %v", c)
			continue
		}
		crashed++
		ans, err := time.Parse(time.RFC3339, c["answered_at"].(string))
		require.NoError(t, err, "the answer was stored while the call went on: %v", c)
		end, err := time.Parse(time.RFC3339, c["ended_at"].(string))
		require.NoError(t, err)
		require.True(t, end.After(ans.Add(time.Second)), "closed at its last alive mark, not at its answer: %v", c)
		require.WithinDuration(t, killed, end, 2500*time.Millisecond, "closed near the crash: %v", c)
		require.Positive(t, c["duration_ms"].(float64))
		require.Contains(t, c["end_reason"], "stopped without ending the call")
	}
	require.Equal(t, calls, crashed)
	require.Len(t, d2.calls(t, "?state=active"), 0)
}
