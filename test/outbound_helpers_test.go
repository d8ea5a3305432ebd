package test

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/test/pcap"
)

// callee is the data of testdata/sipp/callee.xml.tmpl: sipp as the
// callee of a placed call, and as the carrier that challenges it.
type callee struct {
	Name           string
	Challenge      int // 401 or 407: ask for digest credentials User/Password
	User, Password string
	Status         int // > 0: refuse the INVITE with it (and Reason)
	Reason         string
	NoAnswer       bool // ring until the CANCEL
	// CancelReason: the CANCEL must carry a Reason header matching this
	// regular expression (sipp's ereg).
	CancelReason string
	RingMs       int
	Pcap         string // played after the ACK
	ByeTimeoutMs int
	// CalleeBye: the callee hangs up TalkMs after the ACK.
	CalleeBye bool
	TalkMs    int
	// Refer: the callee accepts a REFER (202) and NOTIFYs its success.
	Refer bool
	// OfferRE must match the INVITE's SDP (without a challenge).
	OfferRE string
	// AnswerPT and AnswerRtpmap are the codec of the answer (default
	// 0, PCMU/8000).
	AnswerPT     int
	AnswerRtpmap string
}

// startCallee runs sipp as the callee on a free loopback port and
// returns the port it listens on.
func startCallee(t *testing.T, c callee) (int, *sippRun) {
	t.Helper()
	return startCallees(t, c, 1)
}

// startCallees is startCallee for calls calls, at once or in turn.
func startCallees(t *testing.T, c callee, calls int) (int, *sippRun) {
	t.Helper()
	if c.ByeTimeoutMs == 0 {
		c.ByeTimeoutMs = 60000
	}
	return startSippListener(t, "callee.xml.tmpl", c, 90*time.Second, "-m", fmt.Sprint(calls))
}

// espeakPCM renders text with espeak-ng at 8 kHz.
func espeakPCM(t *testing.T, text string) []int16 {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (apt install espeak-ng sox)", tool)
	}
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "raw.wav"), filepath.Join(dir, "8k.wav")
	b, err := exec.Command("espeak-ng", "-v", "en-us", "-w", raw, text).CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "8000", "-c", "1", "-b", "16", out).CombinedOutput()
	require.NoError(t, err, "%s", b)
	a, err := wav.ReadFile(out)
	require.NoError(t, err)
	return a.Samples
}

// beepPCM is a 1 kHz answering-machine beep.
func beepPCM(d time.Duration) []int16 {
	out := make([]int16, int(d.Seconds()*8000))
	for i := range out {
		out[i] = int16(12000 * math.Sin(2*math.Pi*1000*float64(i)/8000))
	}
	return out
}

func silencePCM(d time.Duration) []int16 { return make([]int16, int(d.Seconds()*8000)) }

// calleePcap writes pcm (8 kHz) as a PCMU RTP capture for sipp's
// play_pcap_audio, in 20 ms packets, and returns its path and length.
func calleePcap(t *testing.T, parts ...[]int16) (string, time.Duration) {
	t.Helper()
	var pcm []int16
	for _, p := range parts {
		pcm = append(pcm, p...)
	}
	var payloads [][]byte
	for off := 0; off < len(pcm); off += 160 {
		frame := make([]int16, 160)
		copy(frame, pcm[off:])
		payloads = append(payloads, media.PCMU.EncodeFrame(nil, frame))
	}
	path := filepath.Join(t.TempDir(), "callee.pcap")
	require.NoError(t, pcap.WriteRTP(path, 0, payloads, 20*time.Millisecond))
	return path, time.Duration(len(payloads)) * 20 * time.Millisecond
}

// outboundNumber creates an echo agent with a greeting and a number
// routed to it whose outbound trunk is the callee at port (with user and
// password when set); it returns the agent id.
func outboundNumber(t *testing.T, d *apptest.Daemon, number string, port int, user, password string) string {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "outbound " + number,
		"greeting": "Hi, this is Acme calling about your order."}, 200)
	trunk := map[string]any{"uri": fmt.Sprintf("sip:127.0.0.1:%d", port)}
	if user != "" {
		trunk["auth_username"], trunk["auth_password"] = user, password
	}
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "out " + number,
		"phone_number": number, "agent_id": ag["agent_id"], "outbound_trunk": trunk}, 200)
	return ag["agent_id"].(string)
}

// waitRecord polls GET /v1/calls/{id} until ok says the record is there.
func waitRecord(t *testing.T, d *apptest.Daemon, id string, within time.Duration, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var last map[string]any
	// Polls the API: nothing pushes a call record's changes.
	if !assert.Eventually(t, func() bool {
		rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
		last = rec
		return ok(rec)
	}, within, 50*time.Millisecond) {
		t.Fatalf("call %s: record never as expected within %s; last: %v", id, within, last)
	}
	return last
}

// recordEvents are the record's events of kind.
func recordEvents(rec map[string]any, kind string) []map[string]any {
	var out []map[string]any
	evs, _ := rec["events"].([]any)
	for _, e := range evs {
		m, _ := e.(map[string]any)
		if m["kind"] == kind {
			out = append(out, m)
		}
	}
	return out
}

// eventAt parses an entry's time.
func eventAt(t *testing.T, m map[string]any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, m["at"].(string))
	require.NoError(t, err)
	return at
}

// numberID is the id of the daemon's number e164.
func numberID(t *testing.T, d *apptest.Daemon, e164 string) string {
	t.Helper()
	list := d.JSON(t, "GET", "/v2/phone-numbers?page_size=100", d.OwnerKey, nil, 200)
	for _, n := range list["phone_numbers"].([]any) {
		m := n.(map[string]any)
		if m["phone_number"] == e164 {
			return m["phone_number_id"].(string)
		}
	}
	t.Fatalf("no number %s", e164)
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// dumpOnFail logs the daemon's call lines and sipp's output when the test
// fails, so that a failed dial can be read.
func dumpOnFail(t *testing.T, d *apptest.Daemon, r *sippRun) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, l := range strings.Split(d.Logs.String(), "\n") {
			if !strings.Contains(l, "http request") && strings.Contains(l, "call") {
				t.Log(l)
			}
		}
		select {
		case <-r.done:
			t.Log("sipp:", tail(r.out, 6000))
		default:
			t.Log("sipp still running")
		}
	})
}

// outboundSetup starts the callee c (sipp), a daemon and the team number
// from, routed to an agent, whose outbound trunk reaches c with c's
// credentials; both are dumped if the test fails. It returns the callee's
// port and the agent's id.
func outboundSetup(t *testing.T, c callee, from string) (*apptest.Daemon, *sippRun, int, string) {
	t.Helper()
	port, sipp := startCallee(t, c)
	d := callDaemon(t, nil)
	agentID := outboundNumber(t, d, from, port, c.User, c.Password)
	dumpOnFail(t, d, sipp)
	return d, sipp, port, agentID
}
