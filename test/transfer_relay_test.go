package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media"
	"switchboard/test/pcap"
)

// noiseFrames are n 20 ms frames of seeded noise in law c's code words:
// every frame differs from every other, so a frame the human receives
// names the caller's frame it came from. A μ-law frame carries 0x7F, the
// negative zero a phone sends for the faintest negative samples, every
// 16 bytes: decoded and encoded again it comes back as 0xFF, so only a
// relay of the code words hands such a frame on as it came.
func noiseFrames(c media.Codec, n int) [][]byte {
	rng := rand.New(rand.NewPCG(23, uint64(c.PayloadType)))
	out := make([][]byte, n)
	pcm := make([]int16, 160)
	for i := range out {
		for j := range pcm {
			pcm[j] = int16(rng.IntN(16000) - 8000)
		}
		out[i] = c.EncodeFrame(nil, pcm)
		if c == media.PCMU {
			for j := i % 16; j < len(out[i]); j += 16 {
				out[i][j] = 0x7F
			}
		}
	}
	return out
}

// TestTransferBridgeRelaysCodeWords: a sipp caller bridged to a sipp
// human who answers PCMU, with the human's RTP going to the test's
// socket. A PCMU caller's code words reach the human byte for byte (the
// bridge relays them: nothing decoded, resampled or encoded on the
// way); a PCMA caller's reach it transcoded once, by the table (each
// frame is PCMU.Transcode of the caller's). The routes' chains in the
// call's log say so. Before, the placed leg took the caller's audio as
// PCM (at the conversation's rate) and encoded it again: μ-law's
// negative zero came back as 0xFF, so no frame arrived as the caller
// sent it (and at 24 kHz, none would for the resampling).
func TestTransferBridgeRelaysCodeWords(t *testing.T) {
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557324")
	for _, law := range []media.Codec{media.PCMU, media.PCMA} {
		t.Run(law.Name+" caller to a PCMU human", func(t *testing.T) {
			requireNoCalls(t, d)
			frames := noiseFrames(law, 15*50)
			path := filepath.Join(t.TempDir(), "caller.pcap")
			require.NoError(t, pcap.WriteRTP(path, law.PayloadType, frames, 20*time.Millisecond))
			peer := newRTPPeer(t) // the human's RTP: what the appliance sends the human
			uri, sipp := startHuman(t, human{Name: "relay", RingMs: 100, Port: fmt.Sprint(peer.port())})
			dumpOnFail(t, d, sipp)
			pt := law.PayloadType
			s := scenario{Name: "relay-" + law.Name, Port: "[media_port]", Formats: fmt.Sprintf("%d 101", pt), WantPT: int(pt), Ptime: 20,
				Status: 200, Play: path, PauseMs: 12000,
				Rtpmaps: fmt.Sprintf("      a=rtpmap:%d %s/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16\n", pt, law.Name)}
			done := make(chan sippResult, 1)
			go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), number) }()
			c := liveCall(t, d)
			rec := bridgeTo(t, d, c.ID(), uri, nil)
			tr := rec["transfers"].([]any)[0].(map[string]any)
			require.Equal(t, "PCMU", tr["leg"].(map[string]any)["codec"])
			(<-done).requireOK(t)
			requireNoCalls(t, d)
			sipp.wait(t, 10*time.Second)

			want := map[string]int{}
			for i, f := range frames {
				if law != media.PCMU {
					f = media.PCMU.Transcode(nil, law, f)
				}
				want[string(f)] = i
			}
			var relayed, audio int
			last := -1
			inOrder := true
			for _, p := range peer.received() {
				if p.hdr.PayloadType != 0 || bytes.Equal(p.raw, bytes.Repeat([]byte{media.PCMU.SilenceByte()}, 160)) {
					continue
				}
				audio++
				if i, ok := want[string(p.raw)]; ok {
					relayed++
					inOrder = inOrder && i > last
					last = i
				}
			}
			t.Logf("the human received %d frames of audio, %d of them the caller's code words as sent (%s: %s)", audio, relayed, law.Name,
				map[bool]string{true: "relayed", false: "transcoded once"}[law == media.PCMU])
			require.Greater(t, relayed, 5*50, "fewer than 5 s of the caller's frames reached the human as the caller sent them")
			// A frame the human's jitter buffer concealed (late on a loaded
			// machine) is not the caller's: at most a few.
			require.GreaterOrEqual(t, relayed, audio*9/10, "the caller's frames did not reach the human as sent")
			toHuman, toCaller := routeChains(t, d, c.ID(), c.Leg().ID())
			wantTo := map[string]string{"PCMU": "PCMU | PCMU -> Playout(PCMU)", "PCMA": "PCMA -> PCMU | PCMU -> Playout(PCMU)"}[law.Name]
			wantFrom := map[string]string{"PCMU": "PCMU | PCMU -> Playout(PCMU)", "PCMA": "PCMU -> PCMA | PCMA -> Playout(PCMA)"}[law.Name]
			require.Equal(t, wantTo, toHuman, "the caller's voice to the human")
			require.Equal(t, wantFrom, toCaller, "the human's voice to the caller")
			require.True(t, inOrder, "the caller's frames reached the human out of order")
			require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")
		})
	}
}

// routeChains are the chains of the last routes in call id's log that
// made the human hear the caller and the caller (leg caller) hear the
// human.
func routeChains(t *testing.T, d *apptest.Daemon, id, caller string) (toHuman, toCaller string) {
	t.Helper()
	for _, l := range strings.Split(d.Logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["message"] != "route" || m["call_id"] != id || m["chain"] == nil {
			continue
		}
		if m["party"] == caller {
			toCaller = m["chain"].(string)
		} else {
			toHuman = m["chain"].(string)
		}
	}
	require.NotEmpty(t, toHuman, "no route of the human in the log")
	require.NotEmpty(t, toCaller, "no route of the caller in the log")
	return toHuman, toCaller
}
