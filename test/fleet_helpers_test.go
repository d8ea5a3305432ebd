package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fleetSecret and fleetOwner are shared by the nodes of a test fleet, as
// an operator shares them (SWITCHBOARD_CLUSTER_SECRET, SWITCHBOARD_ADMIN_KEY,
// SWITCHBOARD_SECRET_KEY).
const (
	fleetSecret    = "fleet-test-secret-0123456789"
	fleetOwner     = "sk-fleet-owner-key-0123456789abcdef"
	fleetMasterKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	// fleetToolsSecret is a Standard Webhooks secret (base64 of 24 bytes).
	fleetToolsSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"
)

// fleetNode is one switchboard process of a test fleet.
type fleetNode struct {
	id     string
	cmd    *exec.Cmd
	url    string
	sip    string
	exited chan struct{}
	served chan map[string]any
	// exitTime is when the process ended.
	exitTime time.Time
	mu       sync.Mutex
	logs     strings.Builder
}

// startFleetNode runs `switchboard serve` as node id on the shared database
// dbURL, SIP on sipPort (the dispatcher list names it), and waits until it
// serves.
func startFleetNode(t *testing.T, id, dbURL string, sipPort int, rtpPorts string, env ...string) *fleetNode {
	t.Helper()
	n := launchFleetNode(t, id, dbURL, sipPort, rtpPorts, env...)
	n.waitServing(t)
	return n
}

// launchFleetNode starts the process; waitServing waits until it serves.
func launchFleetNode(t *testing.T, id, dbURL string, sipPort int, rtpPorts string, env ...string) *fleetNode {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--node-id", id, "--database-url", dbURL,
		"--http-addr", "127.0.0.1:0", "--sip-addr", fmt.Sprintf("127.0.0.1:%d", sipPort), "--rtp-ports", rtpPorts,
		"--log-format", "json")
	cmd.Env = append([]string{
		"SWITCHBOARD_DATA_DIR=" + filepath.Join(t.TempDir(), id),
		"SWITCHBOARD_CLUSTER_SECRET=" + fleetSecret,
		"SWITCHBOARD_ADMIN_KEY=" + fleetOwner,
		"SWITCHBOARD_SECRET_KEY=" + fleetMasterKey,
		"SWITCHBOARD_TOOLS_SECRET=" + fleetToolsSecret,
		"SWITCHBOARD_CLUSTER_HEARTBEAT=250ms",
		// A node is lost after 10 s without a heartbeat: the fleet tests
		// run beside others, and with 1.5 s a heartbeat late under that
		// load had a node declare a live one lost and end its calls
		// (ended_by node_lost). The tests that kill a node ask for less
		// (killedNodeTimeout).
		"SWITCHBOARD_CLUSTER_NODE_TIMEOUT=10s",
		"PATH=" + os.Getenv("PATH"),
	}, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	n := &fleetNode{id: id, cmd: cmd, exited: make(chan struct{}), served: make(chan map[string]any, 1)}
	served := n.served
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			n.mu.Lock()
			n.logs.Write(sc.Bytes())
			n.logs.WriteByte('\n')
			n.mu.Unlock()
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["message"] == "switchboard is serving" {
				served <- m
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		cmd.Wait()
		n.mu.Lock()
		n.exitTime = time.Now()
		n.mu.Unlock()
		close(n.exited)
	}()
	t.Cleanup(func() {
		n.signal(syscall.SIGKILL)
		<-n.exited
		if t.Failed() {
			t.Logf("node %s log (tail):\n%s", id, tail(n.log(), 6000))
		}
	})
	return n
}

func (n *fleetNode) waitServing(t *testing.T) {
	t.Helper()
	select {
	case m := <-n.served:
		n.url = "http://" + m["http_addr"].(string)
		n.sip = m["sip_addr"].(string)
	case <-n.exited:
		t.Fatalf("node %s exited before serving:\n%s", n.id, tail(n.log(), 4000))
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s did not start", n.id)
	}
}

func (n *fleetNode) log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.logs.String()
}

func (n *fleetNode) signal(s os.Signal) {
	select {
	case <-n.exited:
	default:
		n.cmd.Process.Signal(s)
	}
}

// do sends a request to the node with key and returns status and body.
func (n *fleetNode) do(t *testing.T, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, n.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

// json sends like do, requires want and decodes the body.
func (n *fleetNode) json(t *testing.T, method, path, key string, body any, want int) map[string]any {
	t.Helper()
	st, raw := n.do(t, method, path, key, body)
	require.Equal(t, want, st, "%s %s on %s: %s", method, path, n.id, raw)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}

// calls lists every call record (all nodes: the store is shared).
func (n *fleetNode) calls(t *testing.T) []map[string]any {
	t.Helper()
	m := n.json(t, "GET", "/v1/calls?page_size=100", fleetOwner, nil, 200)
	raw, _ := json.Marshal(m["calls"])
	var out []map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// kamailio is Debian's kamailio running deploy/kamailio/kamailio.cfg on a
// loopback port, dispatching to nodes.
type kamailio struct {
	addr string
	cmd  *exec.Cmd
	out  *syncWriter
}

type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// startKamailio runs the deploy configuration with its listen address and
// dispatcher list set on the command line, in the foreground (-DD), logging
// to stderr (-E); the system service is not involved.
func startKamailio(t *testing.T, port int, nodes ...string) *kamailio {
	t.Helper()
	bin, err := exec.LookPath("kamailio")
	if err != nil {
		bin = "/usr/sbin/kamailio"
	}
	_, err = os.Stat(bin)
	require.NoError(t, err, "kamailio must be installed (Debian kamailio: 'make deps' as root)")
	mods, _ := filepath.Glob("/usr/lib/*/kamailio/modules/dispatcher.so")
	require.NotEmpty(t, mods, "kamailio's dispatcher module is missing (Debian kamailio)")
	dir := t.TempDir()
	var list strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&list, "1 sip:%s\n", n)
	}
	dsList := filepath.Join(dir, "dispatcher.list")
	require.NoError(t, os.WriteFile(dsList, []byte(list.String()), 0o644))
	cfg, err := filepath.Abs(filepath.Join("..", "deploy", "kamailio", "kamailio.cfg"))
	require.NoError(t, err)
	k := &kamailio{addr: fmt.Sprintf("127.0.0.1:%d", port), out: &syncWriter{}}
	ctx, cancel := context.WithCancel(context.Background())
	k.cmd = exec.CommandContext(ctx, bin, "-f", cfg, "-DD", "-E", "-m", "32", "-M", "4",
		"-A", "LISTEN=udp:"+k.addr, "-A", `DS_LIST="`+dsList+`"`, "-A", `MPATH="`+filepath.Dir(mods[0])+`/"`,
		"-P", filepath.Join(dir, "kamailio.pid"), "-Y", dir)
	k.cmd.Stdout, k.cmd.Stderr = k.out, k.out
	k.cmd.Cancel = func() error { return k.cmd.Process.Signal(syscall.SIGTERM) }
	k.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, k.cmd.Start())
	t.Cleanup(func() {
		cancel()
		k.cmd.Wait()
		if t.Failed() {
			t.Logf("kamailio output (tail):\n%s", tail(k.out.String(), 6000))
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(k.out.String(), "udp: 127.0.0.1") }, 10*time.Second, 50*time.Millisecond,
		"kamailio did not start:\n%s", k.out.String())
	return k
}

// jsonField is the string field name of a JSON object (empty when absent).
func jsonField(raw []byte, name string) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}

// freeSIPPort finds a port free for both UDP and TCP (a node binds both on
// its sip.addr), below Linux's ephemeral range so that no outgoing
// connection takes it between the check and the node's bind.
func freeSIPPort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		port := 15000 + rand.IntN(15000)
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		u.Close()
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("no free SIP port")
	return 0
}
