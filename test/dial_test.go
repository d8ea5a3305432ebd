package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media/wav"
	"switchboard/sipleg"
)

// speechWAV writes a sentence spoken by espeak-ng, converted by sox to
// 8 kHz 16-bit mono, and returns its path and samples. Both tools are
// required: the test fails, it does not skip.
func speechWAV(t *testing.T) (string, []int16) {
	t.Helper()
	espeak, err := exec.LookPath("espeak-ng")
	require.NoError(t, err, "espeak-ng is required by this test")
	sox, err := exec.LookPath("sox")
	require.NoError(t, err, "sox is required by this test")
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "raw.wav"), filepath.Join(dir, "speech.wav")
	b, err := exec.Command(espeak, "-w", raw, "Hello, this is the switchboard line test. One, two, three, four, five.").CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command(sox, raw, "-r", "8000", "-c", "1", "-b", "16", out).CombinedOutput()
	require.NoError(t, err, "%s", b)
	a, err := wav.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, 8000, a.SampleRate)
	return out, a.Samples
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func sipTarget(addr netip.AddrPort, number string) string {
	return "sip:" + number + "@" + addr.String()
}

// dial runs `switchboard dial` and returns stdout, stderr and the exit code.
func dial(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	out, errs, code := cli(t, nil, append([]string{"dial"}, args...)...)
	t.Logf("switchboard dial %s\nexit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	return out, errs, code
}

// lineOffset returns the time offset of the first timeline line matching re.
func lineOffset(t *testing.T, out, re string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\+(\d+\.\d{3})s ` + re).FindStringSubmatch(out)
	require.NotNil(t, m, "no timeline line %q in:\n%s", re, out)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

func rms(x []int16) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// bestLag returns the lag (in samples, 0..maxLag) at which y best matches
// x delayed, with the normalised correlation there and at lag 0.
func bestLag(x, y []int16, maxLag int) (lag int, peak, atZero float64) {
	corr := func(l int) float64 {
		n := min(len(x), len(y)-l)
		var xy, xx, yy float64
		for i := range n {
			a, b := float64(x[i]), float64(y[i+l])
			xy += a * b
			xx += a * a
			yy += b * b
		}
		if xx == 0 || yy == 0 {
			return 0
		}
		return xy / math.Sqrt(xx*yy)
	}
	peak = math.Inf(-1)
	for l := 0; l <= maxLag && l < len(y); l++ {
		if c := corr(l); c > peak {
			lag, peak = l, c
		}
	}
	return lag, peak, corr(0)
}

// startRingingRelay forwards SIP over UDP between one caller and server,
// holding back final responses to INVITE for ring: a phone that rings
// before it answers. It puts its own address in the top Via of requests
// (and the caller's back in responses) so that responses pass through it;
// in-dialog requests go straight to the Contact addresses. (Straight to the appliance the 180 and the 200 leave
// within a millisecond; see TestDial/demo_echo.)
func startRingingRelay(t *testing.T, server netip.AddrPort, ring time.Duration) netip.AddrPort {
	t.Helper()
	front, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	require.NoError(t, err)
	back, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	require.NoError(t, err)
	backAddr := back.LocalAddr().String()
	topVia := regexp.MustCompile(`(?mi)^Via:\s*SIP/2\.0/UDP\s+([^;\s]+)`)
	var (
		mu     sync.Mutex
		caller netip.AddrPort
		sentBy string
		wg     sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			n, src, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			msg := buf[:n]
			if m := topVia.FindSubmatchIndex(msg); m != nil { // stand in the path of the responses
				mu.Lock()
				caller, sentBy = src, string(msg[m[2]:m[3]])
				mu.Unlock()
				msg = slices.Concat(msg[:m[2]], []byte(backAddr), msg[m[3]:])
			}
			_, _ = back.WriteToUDPAddrPort(msg, server)
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			n, _, err := back.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			mu.Lock()
			to, via := caller, sentBy
			mu.Unlock()
			msg := bytes.Replace(buf[:n], []byte(backAddr), []byte(via), 1)
			final := bytes.HasPrefix(msg, []byte("SIP/2.0 ")) && !bytes.HasPrefix(msg, []byte("SIP/2.0 1")) &&
				regexp.MustCompile(`(?mi)^CSeq:\s*\d+\s+INVITE\s*$`).Match(msg)
			if final {
				time.AfterFunc(ring, func() { _, _ = front.WriteToUDPAddrPort(msg, to) })
				continue
			}
			_, _ = front.WriteToUDPAddrPort(msg, to)
		}
	}()
	t.Cleanup(func() {
		front.Close()
		back.Close()
		wg.Wait()
	})
	return front.LocalAddr().(*net.UDPAddr).AddrPort()
}

// startFakePhone is a minimal UAS. It answers INVITE with 100 and 180,
// then, when answer is set, with a 200 OK whose SDP points at a port
// nobody sends from (a phone that never sends RTP); otherwise it rings
// until CANCEL (200, then 487 for the INVITE). BYE gets 200.
func startFakePhone(t *testing.T, answer bool) netip.AddrPort {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	require.NoError(t, err)
	self := conn.LocalAddr().String()
	done := make(chan struct{})
	respond := func(req []byte, status string, method string, src netip.AddrPort, body string) {
		var b strings.Builder
		fmt.Fprintf(&b, "SIP/2.0 %s\r\n", status)
		for _, line := range strings.Split(string(req), "\r\n") {
			name, _, _ := strings.Cut(line, ":")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "via", "from", "call-id":
				b.WriteString(line + "\r\n")
			case "to":
				if !strings.Contains(line, "tag=") {
					line += ";tag=fakephone"
				}
				b.WriteString(line + "\r\n")
			case "cseq":
				if method != "" {
					seq := strings.Fields(strings.TrimPrefix(line, name+":"))[0]
					line = "CSeq: " + seq + " " + method
				}
				b.WriteString(line + "\r\n")
			}
		}
		if body != "" {
			b.WriteString("Contact: <sip:phone@" + self + ">\r\nContent-Type: application/sdp\r\n")
		}
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
		_, _ = conn.WriteToUDPAddrPort([]byte(b.String()), src)
	}
	sdp := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
		"m=audio 9 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=ptime:20\r\na=sendrecv\r\n"
	go func() {
		defer close(done)
		buf := make([]byte, 65535)
		invites := map[string][]byte{}
		for {
			n, src, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			req := append([]byte(nil), buf[:n]...)
			callID := regexp.MustCompile(`(?mi)^Call-ID:\s*(\S+)`).FindSubmatch(req)
			if callID == nil {
				continue
			}
			switch {
			case bytes.HasPrefix(req, []byte("INVITE ")):
				invites[string(callID[1])] = req
				respond(req, "100 Trying", "", src, "")
				respond(req, "180 Ringing", "", src, "")
				if answer {
					// The callee answers a moment after ringing, as a phone would.
					time.Sleep(50 * time.Millisecond)
					respond(req, "200 OK", "", src, sdp)
				}
			case bytes.HasPrefix(req, []byte("CANCEL ")):
				respond(req, "200 OK", "", src, "")
				if inv := invites[string(callID[1])]; inv != nil {
					respond(inv, "487 Request Terminated", "INVITE", src, "")
				}
			case bytes.HasPrefix(req, []byte("BYE ")):
				respond(req, "200 OK", "", src, "")
			}
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// demoAgentID finds the seeded demo agent.
func demoAgentID(t *testing.T, d *apptest.Daemon) string {
	t.Helper()
	m := d.JSON(t, "GET", "/v1/agents", d.OwnerKey, nil, 200)
	agents, _ := m["agents"].([]any)
	for _, a := range agents {
		if ag, _ := a.(map[string]any); ag["name"] == "Demo agent" {
			return ag["agent_id"].(string)
		}
	}
	t.Fatalf("no demo agent in %v", m)
	return ""
}

// runningDial is a `switchboard dial` process whose timeline is read as
// it is printed.
type runningDial struct {
	cmd    *exec.Cmd
	out    strings.Builder
	lines  chan string
	stderr apptest.SyncBuffer
}

func startDial(t *testing.T, args ...string) *runningDial {
	t.Helper()
	r := &runningDial{cmd: exec.Command(binary, append([]string{"dial"}, args...)...), lines: make(chan string, 256)}
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	})
	return r
}

// waitLine reads the timeline until a line contains want.
func (r *runningDial) waitLine(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-r.lines:
			require.True(t, ok, "dial exited before %q:\n%s%s", want, r.out.String(), r.stderr.String())
			r.out.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within 15s:\n%s", want, r.out.String())
		}
	}
}

// wait reads the rest of the output and returns it with the exit code.
func (r *runningDial) wait(t *testing.T) (string, int) {
	t.Helper()
	for l := range r.lines {
		r.out.WriteString(l + "\n")
	}
	err := r.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("exit %d\n%s%s", code, r.out.String(), r.stderr.String())
	return r.out.String(), code
}

func TestDial(t *testing.T) {
	d := startDaemon(t, nil)
	sipAddr := d.App.SIPAddr()
	addLineTestNumber(t, d)

	t.Run("line_test_echo", func(t *testing.T) {
		t.Parallel()
		play, speech := speechWAV(t)
		rec := filepath.Join(t.TempDir(), "out.wav")
		// Through a relay that lets the phone ring 150 ms, so the 180 is
		// certainly seen before the 200.
		relay := startRingingRelay(t, sipAddr, 150*time.Millisecond)
		out, _, code := dial(t, sipTarget(relay, lineTestNumber), "--play", play, "--record", rec, "--duration", "4s")
		require.Equal(t, 0, code)
		invite := lineOffset(t, out, `INVITE sent to sip:\+14155550150@`)
		ringing := lineOffset(t, out, `180 Ringing`)
		answered := lineOffset(t, out, `200 OK \(answered: PCMU/8000 ptime 20ms, telephone-event 101, remote 127\.0\.0\.1:\d+\)`)
		lineOffset(t, out, `ACK sent`)
		firstRTP := lineOffset(t, out, `first RTP in from 127\.0\.0\.1:\d+ \(172-byte packet\)`)
		bye := lineOffset(t, out, `BYE sent \(duration reached\)`)
		lineOffset(t, out, `200 OK \(BYE\)`)
		require.Equal(t, 0.0, invite)
		require.Less(t, ringing, answered)
		require.GreaterOrEqual(t, answered-ringing, 0.1, "the relay held the 200 back")
		require.LessOrEqual(t, answered, firstRTP)
		require.InDelta(t, answered+4, bye, 0.5)
		require.Regexp(t, `RTP in:  \d{3} packets, \d+ bytes, lost 0`, out)
		require.Contains(t, out, "recorded 4.")

		// The recording is a valid 8 kHz mono WAV of about the call's length
		// and holds our own speech, echoed back about 500 ms late.
		a, err := wav.ReadFile(rec)
		require.NoError(t, err)
		require.Equal(t, 8000, a.SampleRate)
		require.Equal(t, 1, a.Channels)
		require.InDelta(t, 4.0, a.Duration().Seconds(), 0.3)
		r := a.Samples
		before, after := rms(r[:3200]), rms(r[4800:28000]) // 0-0.4 s, 0.6-3.5 s
		speechLevel := rms(speech[800:24000])
		t.Logf("rms before the echo %.1f, after %.1f, of the input %.1f", before, after, speechLevel)
		require.Less(t, before, 30.0, "silence before the echo starts")
		require.Greater(t, after, 0.3*speechLevel, "the echo is nearly as loud as what was sent")
		require.Greater(t, after, 20*math.Max(before, 1))
		lag, peak, atZero := bestLag(speech[:16000], r, 9600)
		t.Logf("cross-correlation peak %.2f at %v (%.2f at lag 0)", peak, time.Duration(lag)*time.Second/8000, atZero)
		require.Greater(t, peak, 0.6, "the recording is the input delayed")
		require.Less(t, math.Abs(atZero), 0.2)
		require.InDelta(t, 0.6, float64(lag)/8000, 0.25, "echo delay (500 ms plus buffering)")
	})

	t.Run("unknown_number", func(t *testing.T) {
		t.Parallel()
		out, errs, code := dial(t, sipTarget(sipAddr, "+19995550123"), "--duration", "1s")
		require.Equal(t, 1, code)
		lineOffset(t, out, `call failed: 404 Not Found`)
		require.Contains(t, errs, "call failed: 404 Not Found")
		require.NotContains(t, out, "BYE")

		out, _, code = dial(t, sipTarget(sipAddr, "+19995550123"), "--json")
		require.Equal(t, 1, code)
		var res struct {
			Result string
			Status int
			Reason string
			Events []struct{ Kind string }
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Equal(t, "failed", res.Result)
		require.Equal(t, 404, res.Status)
		require.Equal(t, "Not Found", res.Reason)
		require.Equal(t, "invite_sent", res.Events[0].Kind)
		require.Equal(t, "failed", res.Events[len(res.Events)-1].Kind)
	})

	t.Run("digest_auth", func(t *testing.T) {
		t.Parallel()
		status, _, body := d.Do(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{
			"origin": "byo_trunk", "name": "auth", "phone_number": "+14155550177", "agent_id": demoAgentID(t, d),
			"sip_auth": map[string]any{"auth_username": "u", "auth_password": "longenough"},
		})
		require.Less(t, status, 300, "%s", body)
		target := sipTarget(sipAddr, "+14155550177")

		out, _, code := dial(t, target, "--user", "u", "--password", "longenough", "--duration", "1s")
		require.Equal(t, 0, code)
		require.Regexp(t, `(?m)^\+\d+\.\d{3}s 40[17] \S.* \(digest challenge, answering\)$`, out)
		lineOffset(t, out, `INVITE sent to .* \(with credentials\)`)
		lineOffset(t, out, `200 OK \(answered`)

		out, errs, code := dial(t, target, "--user", "u", "--password", "wrong-password", "--duration", "1s")
		require.Equal(t, 1, code)
		require.Regexp(t, `call failed: (401|403|407) `, out+errs)
		require.NotContains(t, out, "answered")

		_, errs, code = dial(t, target, "--duration", "1s")
		require.Equal(t, 1, code, "no credentials: the challenge is final")
		require.Regexp(t, `call failed: 40[17] `, errs)
	})

	t.Run("dtmf_rfc4733", func(t *testing.T) {
		t.Parallel()
		out, _, code := dial(t, sipTarget(sipAddr, demoNumber), "--dtmf", "12#", "--dtmf-delay", "300ms", "--duration", "2s")
		require.Equal(t, 0, code)
		first := lineOffset(t, out, `DTMF 1 sent \(RFC 4733 telephone-event 101, 100ms\)`)
		second := lineOffset(t, out, `DTMF 2 sent`)
		lineOffset(t, out, `DTMF # sent`)
		require.Greater(t, first, 0.3+0.1, "after --dtmf-delay and the key press")
		require.InDelta(t, 0.26, second-first, 0.1, "100 ms key, 3 end packets, 100 ms gap")
		require.Contains(t, out, `DTMF sent: "12#" of "12#"`)
		lineOffset(t, out, `BYE sent`)
	})

	t.Run("dtmf_info", func(t *testing.T) {
		t.Parallel()
		out, _, code := dial(t, sipTarget(sipAddr, demoNumber), "--dtmf", "5*", "--dtmf-mode", "info", "--dtmf-delay", "100ms", "--duration", "1500ms", "--codec", "pcma")
		require.Equal(t, 0, code)
		lineOffset(t, out, `200 OK \(answered: PCMA/8000`)
		lineOffset(t, out, `INFO sent \(application/dtmf-relay\)`)
		lineOffset(t, out, `DTMF 5 sent \(SIP INFO application/dtmf-relay, 200 OK\)`)
		lineOffset(t, out, `DTMF \* sent \(SIP INFO`)
	})

	t.Run("json", func(t *testing.T) {
		t.Parallel()
		out, _, code := dial(t, sipTarget(sipAddr, demoNumber)+";transport=tcp", "--json", "--codec", "pcma", "--duration", "1s", "--from", "+15550001111")
		require.Equal(t, 0, code)
		var res struct {
			Target    string `json:"target"`
			Transport string `json:"transport"`
			CallID    string `json:"sip_call_id"`
			Result    string `json:"result"`
			Ended     string `json:"ended"`
			Media     struct {
				Codec          string `json:"codec"`
				PtimeMs        int    `json:"ptime_ms"`
				TelephoneEvent int    `json:"telephone_event"`
			} `json:"media"`
			RTP struct {
				PacketsIn  int `json:"packets_in"`
				PacketsOut int `json:"packets_out"`
				Lost       int `json:"lost"`
			} `json:"rtp"`
			Events []struct {
				Offset float64 `json:"offset_s"`
				Kind   string  `json:"kind"`
				Status int     `json:"status"`
				Text   string  `json:"text"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Equal(t, "ok", res.Result)
		require.Equal(t, "tcp", res.Transport)
		require.Equal(t, "local_hangup", res.Ended)
		require.NotEmpty(t, res.CallID)
		require.Equal(t, "PCMA", res.Media.Codec)
		require.Equal(t, 20, res.Media.PtimeMs)
		require.Equal(t, 101, res.Media.TelephoneEvent)
		require.Greater(t, res.RTP.PacketsIn, 30)
		require.Greater(t, res.RTP.PacketsOut, 30)
		var kinds []string
		for i, e := range res.Events {
			kinds = append(kinds, e.Kind)
			require.NotEmpty(t, e.Text)
			if i > 0 {
				require.GreaterOrEqual(t, e.Offset, res.Events[i-1].Offset-0.002, "events in time order")
			}
		}
		for _, k := range []string{"invite_sent", "answered", "ack_sent", "first_rtp_in", "bye_sent", "bye_answered"} {
			require.Contains(t, kinds, k)
		}
	})

	t.Run("no_answer", func(t *testing.T) {
		t.Parallel()
		out, errs, code := dial(t, sipTarget(startFakePhone(t, false), "+15550002222"), "--timeout", "700ms")
		require.Equal(t, 1, code)
		ringing := lineOffset(t, out, `180 Ringing`)
		cancel := lineOffset(t, out, `CANCEL sent`)
		lineOffset(t, out, `call failed: no answer within 700ms`)
		require.Less(t, ringing, cancel)
		require.Contains(t, errs, "call failed: no answer within 700ms")
	})

	t.Run("remote_bye", func(t *testing.T) {
		t.Parallel()
		r := startDial(t, sipTarget(sipAddr, "+18005550100"), "--duration", "30s", "--from", "remote-bye")
		r.waitLine(t, "first RTP in")
		var hungUp bool
		for _, c := range d.App.Calls().List() {
			if c.Leg().(*sipleg.Leg).SIP().From() == "remote-bye" {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				require.NoError(t, c.Leg().(*sipleg.Leg).SIP().Hangup(ctx, "test over"))
				cancel()
				hungUp = true
			}
		}
		require.True(t, hungUp, "the call is up on the daemon")
		out, code := r.wait(t)
		require.Equal(t, 0, code)
		lineOffset(t, out, `BYE received`)
		require.NotContains(t, out, "BYE sent")
		require.Contains(t, out, "(remote bye)")
	})

	t.Run("sigterm_finalizes_recording", func(t *testing.T) {
		t.Parallel()
		rec := filepath.Join(t.TempDir(), "out.wav")
		r := startDial(t, sipTarget(sipAddr, demoNumber), "--duration", "30s", "--record", rec)
		r.waitLine(t, "first RTP in")
		// Some of the call is recorded before the signal (real RTP): the
		// recorder's first buffer (32 KB, 2 s) reached the file.
		require.Eventually(t, func() bool {
			fi, err := os.Stat(rec)
			return err == nil && fi.Size() > 0
		}, 10*time.Second, 20*time.Millisecond, "the recording reaches the file")
		require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
		out, code := r.wait(t)
		require.Equal(t, 0, code)
		lineOffset(t, out, `BYE sent \(interrupted\)`)
		lineOffset(t, out, `200 OK \(BYE\)`)
		raw, err := os.ReadFile(rec)
		require.NoError(t, err)
		require.Greater(t, len(raw), 44+4000, "half a second of audio")
		require.Equal(t, uint32(len(raw)-44), le32(raw[40:]), "data size written on exit")
		require.Equal(t, uint32(len(raw)-8), le32(raw[4:]), "RIFF size written on exit")
	})

	t.Run("no_rtp", func(t *testing.T) {
		t.Parallel()
		out, errs, code := dial(t, sipTarget(startFakePhone(t, true), "+15550003333"), "--duration", "2500ms")
		require.Equal(t, 1, code)
		ringing := lineOffset(t, out, `180 Ringing`)
		answered := lineOffset(t, out, `200 OK \(answered: PCMU/8000 ptime 20ms, telephone-event 101, remote 127\.0\.0\.1:9\)`)
		require.Less(t, ringing, answered)
		lineOffset(t, out, `BYE sent`)
		lineOffset(t, out, `call failed: no RTP received`)
		require.NotContains(t, out, "first RTP in")
		require.Contains(t, errs, "no RTP received from the far end")
	})

	t.Run("play_22k", func(t *testing.T) {
		t.Parallel()
		// espeak-ng writes 22050 Hz: dial resamples it.
		raw := filepath.Join(t.TempDir(), "22k.wav")
		b, err := exec.Command("espeak-ng", "-w", raw, "twenty two kilohertz").CombinedOutput()
		require.NoError(t, err, "%s", b)
		out, _, code := dial(t, sipTarget(sipAddr, lineTestNumber), "--play", raw, "--duration", "1s")
		require.Equal(t, 0, code, out)
	})

	t.Run("bad_input", func(t *testing.T) {
		t.Parallel()
		espeak, err := exec.LookPath("espeak-ng")
		require.NoError(t, err, "espeak-ng is required by this test")
		raw := filepath.Join(t.TempDir(), "22k.wav")
		b, err := exec.Command(espeak, "-w", raw, "wrong format").CombinedOutput()
		require.NoError(t, err, "%s", b)
		eight := filepath.Join(t.TempDir(), "8bit.wav")
		b, err = exec.Command("sox", raw, "-b", "8", eight).CombinedOutput()
		require.NoError(t, err, "%s", b)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{sipTarget(sipAddr, demoNumber), "--play", eight}, "sox"},
			{[]string{sipTarget(sipAddr, demoNumber), "--dtmf", "12x"}, `'x' is not a DTMF key`},
			{[]string{"sips:" + demoNumber + "@" + sipAddr.String()}, "sips (TLS) is not supported"},
			{[]string{sipAddr.String()}, "no number before @"},
			{[]string{sipTarget(sipAddr, demoNumber), "--codec", "opus"}, `--codec "opus"`},
		} {
			out, errs, code := dial(t, tc.args...)
			require.Equal(t, 1, code)
			require.Contains(t, errs, tc.want)
			require.NotContains(t, out, "INVITE sent", "nothing is dialled")
		}
	})
}
