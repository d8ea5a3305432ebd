package test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/app/apptest"
	"switchboard/call"
	"switchboard/sip"
	"switchboard/sip/siptest"
	"switchboard/sipleg"
)

// Numbers the call tests create besides the demo number.
const (
	forbiddenNumber = "+14155550403" // allowed_addresses 10.9.9.0/24 only
	authNumber      = "+14155550401" // digest credentials
	authUser        = "trunk-e2e"
	authPass        = "e2e-Secret-pass-41"
)

// TestCalls drives one in-process appliance with sipp as the caller
// through every call outcome, then checks that nothing leaked: no call,
// no goroutine, no RTP port.
func TestCalls(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	d := callDaemon(t, map[string]string{"SWITCHBOARD_MEDIA_TIMEOUT": "2s"})
	createAgentNumber(t, d, forbiddenNumber, map[string]any{"allowed_addresses": []string{"10.9.9.0/24"}})
	createAgentNumber(t, d, authNumber, map[string]any{"auth_username": authUser, "auth_password": authPass})
	metrics(t, d) // the HTTP client's connection exists before the baseline
	idle := settledGoroutines(0)

	t.Run("pcap audio is received and echoed back", func(t *testing.T) { testPcapEcho(t, d) })
	t.Run("refused", func(t *testing.T) { testRefusals(t, d) })
	t.Run("digest 401 then admitted", func(t *testing.T) { testDigest(t, d) })
	t.Run("cancel 487", func(t *testing.T) { testCancel(t, d) })
	t.Run("hold and resume", func(t *testing.T) { testHold(t, d) })
	t.Run("silent media times out", func(t *testing.T) { testMediaTimeout(t, d) })

	// After the calls: the call manager is empty, every RTP port can be
	// bound again, and the goroutine count is back to the idle daemon's.
	requireNoCalls(t, d)
	requirePortsFree(t, d)
	n := settledGoroutines(idle)
	require.LessOrEqual(t, n, idle, "goroutines after the calls: %d, idle daemon: %d\n%s", n, idle, goroutineDump())
	d.Stop(t)
	goleak.VerifyNone(t, ignore)
}

// settledGoroutines waits (up to 10 s) for the goroutine count to drop to
// target (0: until it stops changing) and returns it.
func settledGoroutines(target int) int {
	n := runtime.NumGoroutine()
	// Polls the runtime's goroutine count (nothing reports it settled); a
	// count that does not settle is judged by the caller, with a dump.
	assert.Eventually(new(assert.CollectT), func() bool {
		m := runtime.NumGoroutine()
		settled := (target > 0 && m <= target) || (target == 0 && m == n)
		n = m
		return settled
	}, 10*time.Second, 100*time.Millisecond)
	return n
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// metrics scrapes GET /metrics into name{labels} -> value.
func metrics(t *testing.T, d *apptest.Daemon) map[string]float64 {
	t.Helper()
	st, _, raw := d.Do(t, http.MethodGet, "/metrics", "", nil)
	require.Equal(t, 200, st)
	return parseMetrics(string(raw))
}

// parseMetrics reads a Prometheus text exposition: `name{labels}` -> value.
func parseMetrics(raw string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

func testPcapEcho(t *testing.T, d *apptest.Daemon) {
	peer := newRTPPeer(t)
	s := pcmaCall("pcap_echo", 200)
	s.Port, s.Play, s.PauseMs, s.Ptime = fmt.Sprint(peer.port()), g711aPcap, 4000, 30 // the pcap's packets are 30 ms
	done := make(chan sippResult, 1)
	go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), "14155550150") }()

	c := liveCall(t, d)
	require.Eventually(t, func() bool {
		m := c.Snapshot().Media
		return c.Snapshot().State == call.StateActive && m.PacketsIn > 20 && m.PacketsOut > 20
	}, 10*time.Second, 10*time.Millisecond, "RTP both ways while the call is live: %+v", c.Snapshot().Media)
	(<-done).requireOK(t)
	requireNoCalls(t, d)

	snap := c.Snapshot()
	require.Equal(t, call.StateEnded, snap.State)
	require.Equal(t, call.EndedByCaller, snap.EndedBy)
	require.Equal(t, "PCMA", c.Leg().(*sipleg.Leg).SIP().Offer().Codec.Name)
	require.Equal(t, uint64(1), snap.Media.Latches, "sipp's pcap comes from port 0 on the SDP's host: the SDP address is latched, RTP keeps going there")
	require.Zero(t, snap.Media.Strangers)
	// 4 s of 30 ms packets both ways (the answer follows the offer's ptime).
	require.Greater(t, snap.Media.PacketsIn, uint64(100))
	got := peer.received()
	require.Greater(t, len(got), 100, "the test's socket received the appliance's RTP")
	require.Equal(t, uint8(8), got[len(got)-1].hdr.PayloadType, "answered in PCMA")

	// The echoed audio is the pcap's speech, about 500 ms later.
	ref, err := readPcapG711(g711aPcap)
	require.NoError(t, err)
	ref = ref[:3600*8] // what sipp surely played before its BYE, 4 s after the ACK
	heard := streamPCM(got)
	windows, matched, median := echoWindows(ref, heard, 0, 2*8000, 0.7)
	rev := slices.Clone(ref)
	slices.Reverse(rev)
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 2*8000, 0.7)
	t.Logf("echo: %d/%d speech windows matched, median lag %v; reversed control %d/%d", matched, windows,
		time.Duration(median)*time.Second/8000, ctlMatched, ctlWindows)
	requireEcho(t, 5, windows, matched, median, ctlWindows, ctlMatched)
}

func testRefusals(t *testing.T, d *apptest.Daemon) {
	g729 := scenario{Name: "g729", Port: "[media_port]", Formats: "18", Ptime: 20, Status: 488, Rtpmaps: "      a=rtpmap:18 G729/8000\n"}
	cases := []struct {
		name    string
		s       scenario
		service string
		result  string
	}{
		{"unknown number 404", pcmaCall("unknown", 404), "15559999999", sip.ResultNotFound},
		{"source not allowed 403", pcmaCall("cidr", 403), "14155550403", sip.ResultForbidden},
		{"G.729 only 488", g729, "14155550150", sip.ResultNoCodec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := `switchboard_sip_invites_total{result="` + tc.result + `"}`
			before := metrics(t, d)[key]
			runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", tc.s), tc.service).requireOK(t)
			require.Equal(t, before+1, metrics(t, d)[key])
			require.Zero(t, d.App.Calls().Active())
		})
	}
}

// testDigest: the appliance challenges with SHA-256 first, then MD5 (one
// WWW-Authenticate each, RFC 8760). sipp 3.6 reads only the first header
// and knows only MD5 ("createAuthHeader: authentication must use MD5 or
// AKAv1-MD5"), so sipp checks the challenge and the project's own dialer
// answers it (SHA-256) and is admitted.
func testDigest(t *testing.T, d *apptest.Daemon) {
	before := metrics(t, d)
	s := pcmaCall("digest", 401)
	s.Header, s.HeaderRegexp = "WWW-Authenticate:", `Digest .*algorithm=SHA-256`
	runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), "14155550401").requireOK(t)

	peer := newRTPPeer(t)
	dialer := siptest.NewSoftphone(t)
	var kinds []string
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := dialer.Dial(ctx, sip.DialRequest{
		Target: d.App.SIPAddr().String(), To: "14155550401", User: authUser, Password: authPass,
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(peer.port())), Codecs: []sip.Codec{sip.PCMU},
		OnEvent: func(e sip.SoftphoneEvent) {
			mu.Lock()
			defer mu.Unlock()
			if e.Kind != "provisional" {
				kinds = append(kinds, e.Kind)
			}
		},
	})
	require.NoError(t, err)
	mu.Lock()
	require.Equal(t, []string{"invite_sent", "challenge", "invite_sent", "answered", "ack_sent"}, kinds)
	mu.Unlock()
	require.Equal(t, "PCMU", out.Media().Codec.Name)
	require.Eventually(t, func() bool { return peer.count() > 10 }, 5*time.Second, 10*time.Millisecond, "RTP to the admitted caller")
	require.NoError(t, out.Hangup(ctx, "done"))
	requireNoCalls(t, d)

	after := metrics(t, d)
	for result, n := range map[string]float64{sip.ResultChallenged: 2, sip.ResultAccepted: 1, sip.ResultAuthFailed: 0} {
		key := `switchboard_sip_invites_total{result="` + result + `"}`
		require.Equal(t, before[key]+n, after[key], key)
	}
}

// testCancel: CANCEL right after 100 Trying gets 200 and the INVITE 487.
// The echo conversation answers at once, so the CANCEL races the 200 OK
// (about half of the attempts win on this machine, a quarter with two busy
// loops on its two cores); an attempt that loses is completed cleanly by
// the scenario (ACK, BYE). The test needs one 487 within 40 attempts and
// every attempt to end cleanly.
func testCancel(t *testing.T, d *apptest.Daemon) {
	var outcomes []string
	for range 40 {
		peer := newRTPPeer(t)
		log := filepath.Join(t.TempDir(), "sipp.log")
		runSipp(t, d.App.SIPAddr(), render(t, "cancel.xml.tmpl", map[string]any{"Port": peer.port()}), "14155550150",
			"-trace_logs", "-log_file", log).requireOK(t)
		requireNoCalls(t, d)
		raw, err := os.ReadFile(log)
		require.NoError(t, err)
		out := strings.TrimSpace(string(raw))
		outcomes = append(outcomes, out)
		if out == "outcome=487" {
			break
		}
		require.Equal(t, "outcome=answered", out)
	}
	t.Logf("cancel attempts: %v", outcomes)
	require.Equal(t, "outcome=487", outcomes[len(outcomes)-1], "no CANCEL won the race against the answer")
}

func testHold(t *testing.T, d *apptest.Daemon) {
	peer := newRTPPeer(t)
	s := pcmaCall("hold", 200)
	s.Port, s.Play, s.PauseMs, s.HoldMs = fmt.Sprint(peer.port()), g711aPcap, 1500, 2000
	done := make(chan sippResult, 1)
	go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), "14155550150") }()
	c := liveCall(t, d)

	// Follow the call's media direction; on hold (the caller sendonly),
	// the appliance's RTP must stop, and come back on resume.
	dir := func() sip.Direction { return c.Leg().(*sipleg.Leg).SIP().Media().Direction }
	require.Eventually(t, func() bool { return peer.count() > 20 }, 5*time.Second, 10*time.Millisecond, "RTP before hold")
	require.Eventually(t, func() bool { return dir() == sip.SendOnly }, 10*time.Second, 5*time.Millisecond, "hold")
	time.Sleep(200 * time.Millisecond) // the pacer pauses right after the update (nothing reports it; real RTP in flight)
	onHold := peer.count()
	var held int
	// Counts what the peer gets while the call is on hold (real RTP),
	// until the caller resumes.
	require.Eventually(t, func() bool {
		if dir() == sip.SendOnly {
			held = peer.count()
			return false
		}
		return true
	}, 20*time.Second, 5*time.Millisecond, "resume")
	require.Equal(t, sip.SendRecv, dir())
	require.Equal(t, onHold, held, "RTP sent while the caller held the call")
	require.Eventually(t, func() bool { return peer.count() > held+20 }, 5*time.Second, 10*time.Millisecond, "RTP after resume")
	(<-done).requireOK(t)
	requireNoCalls(t, d)
}

func testMediaTimeout(t *testing.T, d *apptest.Daemon) {
	peer := newRTPPeer(t) // receives, never sends
	s := pcmaCall("silent", 200)
	s.Port, s.ByeReason, s.ByeTimeoutMs = fmt.Sprint(peer.port()), `cause=200;text="media timeout`, 15000
	done := make(chan sippResult, 1)
	go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), "14155550150") }()
	c := liveCall(t, d)
	(<-done).requireOK(t)
	requireNoCalls(t, d)
	snap := c.Snapshot()
	require.Equal(t, call.EndedByAppliance, snap.EndedBy)
	require.Contains(t, snap.EndReason, "media timeout")
	// The media timer starts with the media session, before the answer.
	took := snap.Ended.Sub(snap.Started)
	require.GreaterOrEqual(t, took, 2*time.Second, "not before SWITCHBOARD_MEDIA_TIMEOUT")
	require.Less(t, took, 10*time.Second)
	require.Zero(t, snap.Media.PacketsIn)
	require.Greater(t, peer.count(), 50, "the appliance kept sending while waiting")
}

// TestDigestMD5ForSipp: with sip.digest_algorithms set to MD5 (for peers
// that read only the first challenge), sipp answers the 401 itself and is
// admitted: the whole call completes.
func TestDigestMD5ForSipp(t *testing.T) {
	d := callDaemon(t, map[string]string{"SWITCHBOARD_SIP_DIGEST_ALGORITHMS": "MD5"})
	createAgentNumber(t, d, authNumber, map[string]any{"auth_username": authUser, "auth_password": authPass})
	s := pcmaCall("digest_md5", 200)
	s.Auth, s.User, s.Password = true, authUser, authPass
	runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), "14155550401").requireOK(t)
	m := metrics(t, d)
	require.Equal(t, 1.0, m[`switchboard_sip_invites_total{result="challenged"}`])
	require.Equal(t, 1.0, m[`switchboard_sip_invites_total{result="accepted"}`])
	requireNoCalls(t, d)
}
