package sip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"
	"weak"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

type fakeNumbers map[string]*Route

func (f fakeNumbers) LookupNumber(_ context.Context, e164 string) (*Route, error) {
	if r, ok := f[e164]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("lookup %s: %w", e164, ErrNumberNotFound)
}

type countMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countMetrics) InviteResult(r string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[r]++
}

func (m *countMetrics) get(r string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[r]
}

const (
	openNumber   = "+15551230000"
	authNumber   = "+15551230001"
	closedNumber = "+15551230002"
	srtpNumber   = "+15551230003" // SRTP required by the number
	wideNumber   = "+15551230004" // codecs G722, PCMU
	authUser     = "alice"
	authPass     = "s3cret-pass"
)

func testNumbers() fakeNumbers {
	return fakeNumbers{
		openNumber:   {NumberID: "num_open", PhoneNumber: openNumber},
		authNumber:   {NumberID: "num_auth", PhoneNumber: authNumber, AuthUsername: authUser, AuthPassword: authPass},
		closedNumber: {NumberID: "num_closed", PhoneNumber: closedNumber, AllowedAddresses: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
		srtpNumber:   {NumberID: "num_srtp", PhoneNumber: srtpNumber, SRTP: SRTPRequired},
		wideNumber:   {NumberID: "num_wide", PhoneNumber: wideNumber, Codecs: []string{"G722", "PCMU"}},
	}
}

// callResult is what the test handler saw of one call.
type callResult struct {
	call    *Call
	cause   error
	updates []MediaParams
	err     error
}

// answeringHandler rings, answers and waits for the end of the call;
// hangupAfter > 0 makes it hang up itself.
type answeringHandler struct {
	hangupAfter time.Duration
	ringFor     time.Duration
	results     chan callResult
}

func newAnsweringHandler() *answeringHandler {
	return &answeringHandler{results: make(chan callResult, 16)}
}

func (h *answeringHandler) HandleCall(ctx context.Context, call *Call) {
	res := callResult{call: call}
	defer func() { h.results <- res }()
	if err := call.Ringing(); err != nil {
		res.err = err
		return
	}
	if h.ringFor > 0 {
		select {
		case <-time.After(h.ringFor):
		case <-ctx.Done():
			res.cause = context.Cause(ctx)
			return
		}
	}
	local := netip.MustParseAddrPort("127.0.0.1:30000")
	if err := call.MediaReady(local); err != nil {
		res.err = err
		return
	}
	if err := call.Answer(ctx, local); err != nil {
		res.err = err
		res.cause = context.Cause(ctx)
		return
	}
	var timer <-chan time.Time
	if h.hangupAfter > 0 {
		timer = time.After(h.hangupAfter)
	}
	for {
		select {
		case p := <-call.MediaUpdates():
			res.updates = append(res.updates, p)
		case <-timer:
			res.err = call.Hangup(context.Background(), "test done")
			res.cause = context.Cause(ctx)
			return
		case <-ctx.Done():
			res.cause = context.Cause(ctx)
			return
		}
	}
}

func (h *answeringHandler) next(t *testing.T) callResult {
	t.Helper()
	select {
	case r := <-h.results:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not finish")
		return callResult{}
	}
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// startServer runs a server on loopback until the test ends.
func startServer(t *testing.T, opts Options, h Handler, so ...ServerOption) *Server {
	t.Helper()
	return startServerLog(t, testLogger(t), opts, h, so...)
}

// startServerLog is startServer with its own logger (a fuzz target's
// testing.F cannot take log lines).
func startServerLog(t testing.TB, log zerolog.Logger, opts Options, h Handler, so ...ServerOption) *Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	// Nothing a test message says may make the server query DNS.
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in tests")
	}}
	srv, err := NewServer(opts, testNumbers(), h, log, append([]ServerOption{WithResolver(noDNS)}, so...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return srv
}

type sippCase struct {
	Name         string
	Status       int
	Formats      string
	Rtpmaps      string
	WantPT       int
	Auth         bool
	AuthStatus   int
	User         string
	Password     string
	Header       string
	HeaderRegexp string
	Hold         bool
	Update       bool
	WaitBye      bool
}

func g711Case(name string, status int) sippCase {
	return sippCase{
		Name: name, Status: status, Formats: "8 0 101", WantPT: 8,
		Rtpmaps:    "      a=rtpmap:8 PCMA/8000\n      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16\n",
		AuthStatus: 401, User: authUser, Password: authPass,
	}
}

func renderScenario(t *testing.T, c sippCase) string {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "sipp", "invite.xml.tmpl"))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, c))
	path := filepath.Join(t.TempDir(), c.Name+".xml")
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

// waitUDPBound waits until a peer started by the test (sipp) has bound
// its loopback UDP port.
func waitUDPBound(t *testing.T, port int) {
	t.Helper()
	require.Eventually(t, func() bool { return udpBound(t, port) }, 10*time.Second, 5*time.Millisecond, "nothing bound udp port %d", port)
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runSipp runs one sipp call against target and returns its error and
// output.
func runSipp(t *testing.T, target netip.AddrPort, transport, scenario, service string, extra ...string) (string, error) {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt sip-tester)")
	tmp := t.TempDir()
	scenario, err = filepath.Abs(scenario)
	require.NoError(t, err)
	// Over TCP sipp binds its port for TCP: a port just free for UDP may
	// still be held by a connection of the previous run in TIME_WAIT.
	port := freeUDPPort(t)
	if strings.HasPrefix(transport, "t") {
		port = freeTCPPort(t)
	}
	args := []string{
		target.String(), "-sf", scenario, "-s", service, "-m", "1", "-l", "1",
		"-i", "127.0.0.1", "-p", fmt.Sprint(port), "-mp", fmt.Sprint(freeUDPPort(t)),
		"-t", transport, "-timeout", "15s", "-timeout_error", "-nostdin", "-bg=false",
		"-trace_err", "-error_file", filepath.Join(tmp, "err.log"),
	}
	args = append(args, extra...)
	args = slicesDelete(args, "-bg=false")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sipp", args...)
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	errLog, _ := os.ReadFile(filepath.Join(tmp, "err.log"))
	return string(out) + "\n" + string(errLog), err
}

func slicesDelete(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func requireSipp(t *testing.T, out string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("sipp failed: %v\n%s", err, tail(out, 4000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestSippCallCallerHangsUp(t *testing.T) {
	for _, transport := range []string{"u1", "t1"} {
		t.Run(transport, func(t *testing.T) {
			h := newAnsweringHandler()
			srv := startServer(t, Options{}, h)
			target := srv.UDPAddr()
			if transport == "t1" {
				target = srv.TCPAddr()
			}
			out, err := runSipp(t, target, transport, renderScenario(t, g711Case("caller_bye", 200)), "15551230000")
			requireSipp(t, out, err)
			r := h.next(t)
			require.NoError(t, r.err)
			require.ErrorIs(t, r.cause, ErrRemoteBye)
			require.Equal(t, "PCMA", r.call.Offer().Codec.Name)
			require.Equal(t, uint8(101), r.call.Offer().DTMFPayloadType)
			require.Equal(t, 20*time.Millisecond, r.call.Offer().Ptime)
			require.Equal(t, openNumber, r.call.Route().PhoneNumber)
			require.Contains(t, r.call.Headers(), Header{Name: "X-Test-Case", Value: "caller_bye"})
			require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
		})
	}
}

func TestSippCallWeHangUp(t *testing.T) {
	h := newAnsweringHandler()
	h.hangupAfter = 300 * time.Millisecond
	srv := startServer(t, Options{}, h)
	c := g711Case("we_bye", 200)
	c.WaitBye = true
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, c), "1-555-123-0000")
	requireSipp(t, out, err)
	r := h.next(t)
	require.NoError(t, r.err)
	require.ErrorIs(t, r.cause, ErrLocalHangup)
}

func TestSippHoldUnhold(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{}, h)
	c := g711Case("hold", 200)
	c.Hold = true
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, c), "15551230000")
	requireSipp(t, out, err)
	r := h.next(t)
	require.ErrorIs(t, r.cause, ErrRemoteBye)
	require.Len(t, r.updates, 2)
	require.Equal(t, SendOnly, r.updates[0].Direction)
	require.False(t, r.updates[0].CanSend())
	require.Equal(t, SendRecv, r.updates[1].Direction)
	require.True(t, r.updates[1].CanSend())
	require.Equal(t, uint16(40002), r.updates[1].RemoteAddr.Port())
}

// TestSippUpdateInactive: an UPDATE (RFC 3311) with a=inactive is answered
// with the current SDP marked inactive, and the call sees the new media
// (no RTP either way, a new remote port).
func TestSippUpdateInactive(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{}, h)
	c := g711Case("update", 200)
	c.Update = true
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, c), "15551230000")
	requireSipp(t, out, err)
	r := h.next(t)
	require.ErrorIs(t, r.cause, ErrRemoteBye)
	require.Len(t, r.updates, 1)
	require.Equal(t, Inactive, r.updates[0].Direction)
	require.False(t, r.updates[0].CanSend())
	require.Equal(t, uint16(40004), r.updates[0].RemoteAddr.Port())
}

func TestSippRefusals(t *testing.T) {
	m := &countMetrics{}
	h := newAnsweringHandler()
	srv := startServer(t, Options{MaxCalls: 5, DigestAlgorithms: []string{"MD5"}}, h, WithMetrics(m))
	g729 := sippCase{Name: "g729", Status: 488, Formats: "18", Rtpmaps: "      a=rtpmap:18 G729/8000\n"}
	cases := []struct {
		name    string
		c       sippCase
		service string
		result  string
	}{
		{"unknown number", g711Case("unknown", 404), "15559999999", ResultNotFound},
		{"not a number", g711Case("garbage", 404), "bob", ResultNotFound},
		{"source not allowed", g711Case("cidr", 403), "15551230002", ResultForbidden},
		{"no common codec", g729, "15551230000", ResultNoCodec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := m.get(tc.result)
			out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, tc.c), tc.service)
			requireSipp(t, out, err)
			require.Equal(t, before+1, m.get(tc.result))
		})
	}
	require.Equal(t, 0, m.get(ResultAccepted))
}

func TestSippDigest(t *testing.T) {
	m := &countMetrics{}
	h := newAnsweringHandler()
	srv := startServer(t, Options{DigestAlgorithms: []string{"MD5"}, AuthFailLimit: 3}, h, WithMetrics(m))

	ok := g711Case("auth_ok", 200)
	ok.Auth = true
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, ok), "15551230001")
	requireSipp(t, out, err)
	require.ErrorIs(t, h.next(t).cause, ErrRemoteBye)
	require.Equal(t, 1, m.get(ResultAccepted))

	// Wrong password: challenged again; the third failure blocks the source.
	bad := g711Case("auth_bad", 401)
	bad.Auth, bad.Password = true, "guess"
	for range 2 {
		out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, bad), "15551230001")
		requireSipp(t, out, err)
	}
	bad.Status = 403
	out, err = runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, bad), "15551230001")
	requireSipp(t, out, err)
	require.Equal(t, 2, m.get(ResultAuthFailed))
	// Blocked: even the right password is not checked.
	ok.Status, ok.Auth = 403, false
	out, err = runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, ok), "15551230001")
	requireSipp(t, out, err)
	require.Equal(t, 2, m.get(ResultRateLimited))
	require.Equal(t, 1, m.get(ResultAccepted))
}

func TestSippProxyAuth407(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{DigestAlgorithms: []string{"MD5"}, ChallengeStatus: 407}, h)
	ok := g711Case("auth407", 200)
	ok.Auth, ok.AuthStatus = true, 407
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, ok), "15551230001")
	requireSipp(t, out, err)
	require.ErrorIs(t, h.next(t).cause, ErrRemoteBye)
}

func TestSippCancel(t *testing.T) {
	h := newAnsweringHandler()
	h.ringFor = 5 * time.Second
	srv := startServer(t, Options{}, h)
	out, err := runSipp(t, srv.UDPAddr(), "u1", filepath.Join("testdata", "sipp", "cancel.xml"), "15551230000")
	requireSipp(t, out, err)
	r := h.next(t)
	require.ErrorIs(t, r.cause, ErrCanceled)
	require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
}

func TestSippMaxCallsAndDrain(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{MaxCalls: 1, RetryAfter: 7 * time.Second}, h)
	// Hold the only slot with a call that stays up.
	long := g711Case("long", 200)
	long.WaitBye = true
	h.hangupAfter = 3 * time.Second
	done := make(chan error, 1)
	go func() {
		out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, long), "15551230000")
		if err != nil {
			err = fmt.Errorf("%w: %s", err, tail(out, 2000))
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return srv.ActiveCalls() == 1 }, 5*time.Second, 10*time.Millisecond)
	over := g711Case("over", 503)
	over.Header, over.HeaderRegexp = "Retry-After:", "7"
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, over), "15551230000")
	requireSipp(t, out, err)
	require.NoError(t, <-done)
	h.next(t)

	srv.Drain()
	out, err = runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, over), "15551230000")
	requireSipp(t, out, err)
}

func TestSippOptions(t *testing.T) {
	srv := startServer(t, Options{}, newAnsweringHandler())
	for _, tr := range []string{"u1", "t1"} {
		target := srv.UDPAddr()
		if tr == "t1" {
			target = srv.TCPAddr()
		}
		out, err := runSipp(t, target, tr, filepath.Join("testdata", "sipp", "options.xml"), "probe")
		requireSipp(t, out, err)
	}
}

var _ = errors.Is
var _ = strings.Contains

// TestEndedCallIsNotKept: sipgo keeps a call's transactions for their
// timers (32 s past the final response); an ended call must not be kept
// with them (at 1,000 call setups a second that was 30,000 calls' state).
func TestEndedCallIsNotKept(t *testing.T) {
	h := newAnsweringHandler()
	srv := startServer(t, Options{}, h)
	out, err := runSipp(t, srv.UDPAddr(), "u1", renderScenario(t, g711Case("caller_bye", 200)), "15551230000")
	requireSipp(t, out, err)
	kept := func() weak.Pointer[Call] {
		r := h.next(t)
		require.NoError(t, r.err)
		return weak.Make(r.call)
	}()
	require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { runtime.GC(); return kept.Value() == nil }, 5*time.Second, 50*time.Millisecond,
		"the ended call is still reachable (its transactions are alive for 32 s)")
}

// TestUDPReadBuffer: the SIP UDP socket asks for udpReadBuffer (the kernel
// caps it at net.core.rmem_max and reports twice what it granted), so a
// burst of ACKs and BYEs at a high call rate is not dropped by the kernel.
func TestUDPReadBuffer(t *testing.T) {
	srv := startServer(t, Options{}, newAnsweringHandler())
	raw, err := srv.udp.(*net.UDPConn).SyscallConn()
	require.NoError(t, err)
	var got int
	var serr error
	require.NoError(t, raw.Control(func(fd uintptr) { got, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) }))
	require.NoError(t, serr)
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	require.NoError(t, err)
	rmemMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	want := 2 * min(udpReadBuffer, rmemMax)
	t.Logf("SO_RCVBUF %d (rmem_max %d)", got, rmemMax)
	require.GreaterOrEqual(t, got, want)
}
