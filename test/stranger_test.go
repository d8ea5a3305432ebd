package test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/sipleg"
)

// strangerTone is the frequency the stranger's RTP carries: if any of it
// reached the echo model, the caller would hear it back.
const strangerTone = 1250.0

// stranger blasts well-formed PCMU RTP (a loud tone) and RTCP from a raw
// UDP socket on loopback at every RTP port of a range, 50 packets a second
// each, and counts what comes back to it.
type stranger struct {
	conn     *net.UDPConn
	got      atomic.Int64
	sent     atomic.Int64
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

func newStranger(t *testing.T, minPort, maxPort int) *stranger {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	s := &stranger{conn: conn, stop: make(chan struct{})}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, err := conn.Read(buf); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			s.got.Add(1)
		}
	}()
	go func() {
		defer s.wg.Done()
		pcm := make([]int16, 160)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		rr := []byte{0x80, 201, 0, 1, 0, 0, 0x33, 0x33} // an RTCP receiver report
		for n := 0; ; n++ {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			for i := range pcm {
				pcm[i] = int16(20000 * math.Sin(2*math.Pi*strangerTone*float64(n*160+i)/8000))
			}
			raw, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: uint16(n), Timestamp: uint32(n) * 160,
				SSRC: 0x5157a9e5, Marker: n == 0}, Payload: media.PCMU.EncodeFrame(nil, pcm)}).Marshal()
			for port := minPort; port+1 <= maxPort; port += 2 {
				if _, err := conn.WriteToUDP(raw, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}); err == nil {
					s.sent.Add(1)
				}
				_, _ = conn.WriteToUDP(rr, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port + 1})
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *stranger) close() {
	s.stopOnce.Do(func() {
		close(s.stop)
		s.conn.Close()
		s.wg.Wait()
	})
}

// toneFrames counts the 20 ms frames of pcm (8 kHz) in which the tone at
// freq holds more than share of the frame's energy (Goertzel).
func toneFrames(pcm []int16, freq, share float64) int {
	const n = 160
	k := 2 * math.Cos(2*math.Pi*freq/8000)
	frames := 0
	for off := 0; off+n <= len(pcm); off += n {
		var s1, s2, energy float64
		for _, v := range pcm[off : off+n] {
			x := float64(v)
			s0 := x + k*s1 - s2
			s2, s1 = s1, s0
			energy += x * x
		}
		power := s1*s1 + s2*s2 - k*s1*s2 // |X(f)|^2
		if energy > 1e6 && 2*power/(n*energy) > share {
			frames++
		}
	}
	return frames
}

// TestStrangerCannotTakeOverCall: baresip calls the echo line and talks
// while a stranger blasts well-formed RTP (a loud tone, the caller's
// payload type) and RTCP at every port of the RTP range from before the
// call until after it. The caller keeps hearing its own speech echoed;
// the call's recording shows that the conversation (the model's input)
// got the caller's speech and none of the stranger's tone; the stranger
// receives nothing; the call's stats and the metric count the stranger's
// packets.
func TestStrangerCannotTakeOverCall(t *testing.T) {
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	// A range of its own: the stranger blasts all of it, and no other
	// test's calls may be in it.
	own := takePorts(t, 20)
	lo, hi := own.lo, own.hi
	d := callDaemon(t, map[string]string{"SWITCHBOARD_RTP_PORTS": fmt.Sprintf("%d-%d", lo, hi)})
	// The line-test number records its calls: the left channel of the
	// recording is the caller's audio as the conversation got it.
	nums := d.JSON(t, "GET", "/v2/phone-numbers", d.OwnerKey, nil, 200)
	var numID string
	for _, n := range nums["phone_numbers"].([]any) {
		if m := n.(map[string]any); m["phone_number"] == lineTestNumber {
			numID, _ = m["phone_number_id"].(string)
		}
	}
	require.NotEmpty(t, numID)
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+numID, d.OwnerKey, map[string]any{"recording": map[string]any{"enabled": true}}, 200)
	dir := t.TempDir()
	speech := paddedSpeechWAV(t, dir)
	st := newStranger(t, lo, hi)
	require.Eventually(t, func() bool { return st.sent.Load() > 0 }, 5*time.Second, 5*time.Millisecond,
		"the stranger is there before the call")

	b := launchBaresip(t, dir, baresipConf{source: speech}, "sip:14155550150@"+d.App.SIPAddr().String(), 45*time.Second)
	buf, rec, stopBaresip := b.out, b.rec, b.stop
	c := liveCall(t, d, func() string { return tail(buf.String(), 3000) })
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 40*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", tail(buf.String(), 3000))
	stopBaresip() // its recording of the call is whole once it exited
	st.close()
	requireNoCalls(t, d)
	snap := c.Snapshot()
	require.Equal(t, call.EndedByCaller, snap.EndedBy, "baresip hung up at the end of its WAV")

	decs, err := filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
	require.NoError(t, err)
	require.Len(t, decs, 1, "baresip's recording of the call: %s", tail(buf.String(), 3000))
	heard, rate, err := readWAV(decs[0])
	require.NoError(t, err)
	require.Equal(t, 8000, rate)
	said, _, err := readWAV(speech)
	require.NoError(t, err)
	windows, matched, median := echoWindows(said, heard, 0, 2*8000, 0.7)
	rev := make([]int16, len(said))
	for i, v := range said {
		rev[len(said)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 2*8000, 0.7)
	toned := toneFrames(heard, strangerTone, 0.6)
	var recording []byte
	require.Eventually(t, func() bool {
		var status int
		status, _, recording = d.Do(t, "GET", "/v1/calls/"+c.ID()+"/recording", d.OwnerKey, nil)
		return status == 200
	}, 5*time.Second, 100*time.Millisecond, "the call's recording")
	a, err := wav.Decode(bytes.NewReader(recording))
	require.NoError(t, err)
	require.Equal(t, 2, a.Channels)
	modelGot := stereoChannel(a, 0)
	gotWindows, gotMatched, _ := echoWindows(said, modelGot, 0, 8000, 0.7)
	gotToned := toneFrames(modelGot, strangerTone, 0.6)
	m := metrics(t, d)
	t.Logf("stranger sent %d RTP packets (and as many RTCP) at the range, got %d back; caller heard %.1f s, %d/%d speech windows echoed "+
		"(median lag %v, reversed control %d/%d), %d frames of the stranger's tone; the conversation got %d/%d speech windows and %d tone frames; call stats %+v; metric %v",
		st.sent.Load(), st.got.Load(), float64(len(heard))/8000, matched, windows, time.Duration(median)*time.Second/8000,
		ctlMatched, ctlWindows, toned, gotMatched, gotWindows, gotToned, snap.Media, m["switchboard_rtp_stranger_packets_total"])
	requireEcho(t, 12, windows, matched, median, ctlWindows, ctlMatched)
	require.Greater(t, st.sent.Load(), int64(1000), "the stranger blasted the whole call")
	require.Zero(t, st.got.Load(), "the stranger received nothing")
	require.Zero(t, toned, "the caller never heard the stranger's tone")
	require.Zero(t, gotToned, "the conversation (the model's input) got none of the stranger's audio")
	require.GreaterOrEqual(t, float64(gotMatched), 0.8*float64(gotWindows), "the conversation got the caller's speech")
	require.Greater(t, snap.Media.Strangers, uint64(100), "the call counted the stranger's packets")
	require.Equal(t, uint64(1), snap.Media.Latches, "latched once, to the caller")
	require.GreaterOrEqual(t, m["switchboard_rtp_stranger_packets_total"], float64(snap.Media.Strangers))

	// Control for the tone detector: the stranger's own stream is all tone.
	pcm := make([]int16, 8000)
	for i := range pcm {
		pcm[i] = int16(20000 * math.Sin(2*math.Pi*strangerTone*float64(i)/8000))
	}
	require.Equal(t, 50, toneFrames(media.PCMU.DecodeFrame(nil, media.PCMU.EncodeFrame(nil, pcm)), strangerTone, 0.6))
}

// TestReinviteMovesMedia: signalling may move a call's media. sipp offers
// one test socket, holds, and resumes with another one's port; the
// appliance's RTP follows the re-INVITE to the new address at once and
// nothing more goes to the old one.
func TestReinviteMovesMedia(t *testing.T) {
	d := callDaemon(t, nil)
	before, after := newRTPPeer(t), newRTPPeer(t)
	s := pcmaCall("move", 200)
	s.Port, s.ResumePort, s.Play, s.PauseMs, s.HoldMs = fmt.Sprint(before.port()), fmt.Sprint(after.port()), g711aPcap, 1500, 1000
	done := make(chan sippResult, 1)
	go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), "14155550150") }()
	c := liveCall(t, d)
	leg := c.Leg().(*sipleg.Leg)
	require.Eventually(t, func() bool { return before.count() > 20 }, 5*time.Second, 10*time.Millisecond, "RTP to the first address")
	require.Eventually(t, func() bool { return int(leg.SIP().Media().RemoteAddr.Port()) == after.port() }, 10*time.Second, 5*time.Millisecond,
		"the re-INVITE with the new port")
	require.Eventually(t, func() bool { return after.count() > 20 }, 5*time.Second, 10*time.Millisecond, "RTP to the new address")
	old, moved := before.count(), after.count()
	// 25 more packets (500 ms) went to the new address: none to the old.
	require.Eventually(t, func() bool { return after.count() >= moved+25 }, 5*time.Second, 10*time.Millisecond, "RTP to the new address goes on")
	require.Equal(t, old, before.count(), "nothing more to the old address")
	(<-done).requireOK(t)
	requireNoCalls(t, d)
	snap := c.Snapshot()
	t.Logf("before the move %d packets, after %d; stats %+v", before.count(), after.count(), snap.Media)
	require.Zero(t, snap.Media.Strangers)
	require.Equal(t, uint64(2), snap.Media.Latches, "the SDP's address, then the new one")
}
