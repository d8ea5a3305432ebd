package test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"
)

// g711aPcap is the PCMA speech capture shipped with sipp (Debian
// sip-tester): 236 packets of 30 ms from port 5000 to 2006.
const g711aPcap = "/usr/share/sip-tester/g711a.pcap"

// scenario fills test/testdata/sipp/call.xml.tmpl.
type scenario struct {
	Name     string
	Port     string // m= port: "[media_port]" (sipp's own) or a test socket
	Formats  string
	Rtpmaps  string
	Ptime    int
	WantPT   int
	Status   int // expected final status; 200 is a full call
	Auth     bool
	User     string
	Password string
	Play     string // pcap played after ACK
	PauseMs  int    // before BYE (and before hold)
	HoldMs   int    // > 0: hold for this long, then resume
	// ResumePort, when set, is the m= port of the resuming re-INVITE:
	// signalling moves the media to another address.
	ResumePort string
	// Header and HeaderRegexp check a header of the expected refusal.
	Header, HeaderRegexp string
	// ByeReason > "": wait for the appliance's BYE and match its Reason
	// header against this regexp within ByeTimeoutMs.
	ByeReason    string
	ByeTimeoutMs int
}

// pcmaCall is a scenario offering PCMA (and PCMU, telephone-event).
func pcmaCall(name string, status int) scenario {
	return scenario{
		Name: name, Port: "[media_port]", Formats: "8 0 101", WantPT: 8, Ptime: 20, Status: status, PauseMs: 300,
		Rtpmaps: "      a=rtpmap:8 PCMA/8000\n      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16\n",
	}
}

// render writes the scenario template file with s to a temporary file.
func render(t *testing.T, file string, s any) string {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "sipp", file))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, s))
	path := filepath.Join(t.TempDir(), "scenario.xml")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// waitUDPBound waits until a peer the test started (sipp) holds its
// loopback UDP port: read from the kernel's socket table (Linux lists
// local addresses as hex IP:port in /proc/net/udp), so that asking does
// not take the port from the peer about to bind it.
func waitUDPBound(t *testing.T, port int) {
	t.Helper()
	want := []byte(fmt.Sprintf(" 0100007F:%04X ", port))
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/net/udp")
		return err == nil && bytes.Contains(b, want)
	}, 10*time.Second, 5*time.Millisecond, "nothing bound udp port %d", port)
}

// sippResult is the outcome of one sipp run.
type sippResult struct {
	out string
	err error
}

// runSipp places one call with scenario file against target (UDP) calling
// service, and returns sipp's output and error (exit status 0 means every
// call passed).
func runSipp(t *testing.T, target netip.AddrPort, scenarioFile, service string, extra ...string) sippResult {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt install sip-tester)")
	tmp := t.TempDir()
	args := []string{
		target.String(), "-sf", scenarioFile, "-s", service, "-m", "1", "-l", "1",
		"-i", "127.0.0.1", "-p", fmt.Sprint(freeUDPPort(t)), "-mp", fmt.Sprint(freeUDPPort(t)),
		"-t", "u1", "-timeout", "30s", "-timeout_error", "-nostdin",
		"-trace_err", "-error_file", filepath.Join(tmp, "err.log"),
	}
	args = append(args, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sipp", args...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	errLog, _ := os.ReadFile(filepath.Join(tmp, "err.log"))
	return sippResult{out: string(out) + "\n" + string(errLog), err: err}
}

// requireOK fails the test with sipp's output unless the call passed.
func (r sippResult) requireOK(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("sipp failed: %v\n%s", r.err, tail(r.out, 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
