package media

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeferredSessionRelaysG711: a deferred session (a placed call: PCM
// at 24 kHz until the answer) with a G.711 listener and a G.711 writer
// made before its answer. Once the answer settles PCMU, it is a G.711
// session like the peer's: the listener relays the peer's code words
// and the writer's code words leave untouched, byte for byte both ways
// (a bridge between two PCMU legs decodes and encodes nothing); settled
// on PCMA, a PCMU listener and writer transcode once (a table).
func TestDeferredSessionRelaysG711(t *testing.T) {
	for _, tc := range []struct {
		settle             Codec
		law                Format
		wantRelayListen    string
		wantRelayWrite     string
		wantFormatSettled  Format
		transcodedBothWays bool
	}{
		{PCMU, FormatPCMU, "PCMU", "PCMU -> Playout(PCMU)", FormatPCMU, false},
		{PCMA, FormatPCMU, "PCMA -> PCMU", "PCMU -> PCMA -> Playout(PCMA)", FormatPCMA, true},
	} {
		t.Run(tc.settle.Name, func(t *testing.T) {
			pool := newPool(t)
			var sink frameSink
			// The codec offered first is the other law: the answer changes it.
			first := PCMA
			if tc.settle == PCMA {
				first = PCMU
			}
			a := newSession(t, pool, SessionOptions{Codec: first, Deferred: true, Rate: 24000, Tap: &sink, JitterDelay: 300 * time.Millisecond})
			l, err := a.Listen(tc.law, sink.onPayload)
			require.NoError(t, err)
			w, err := a.Writer(tc.law, WriterOptions{})
			require.NoError(t, err)
			require.Contains(t, w.String(), "(decode)", "before the answer the writer decodes into PCM")
			// The SIP leg applies its own offer's media before the answer
			// (its first codec): that settles nothing.
			a.SetCodec(first)
			require.Equal(t, PCM16(24000), a.Format())

			require.NoError(t, a.SettleCodec(tc.settle, EncoderOptions{}))
			require.Equal(t, tc.wantFormatSettled, a.Format())
			require.Equal(t, tc.wantRelayListen, l.String(), "the listener made before the answer")
			require.Equal(t, tc.wantRelayWrite, w.String(), "the writer made before the answer")
			require.Contains(t, a.String(), "Playout("+tc.settle.Name+") -> Pacer("+tc.settle.Name+" 20ms)", "the pacer sends code words")

			var peerSink frameSink
			b := newSession(t, pool, SessionOptions{Codec: tc.settle, Tap: &peerSink, JitterDelay: 300 * time.Millisecond})
			listenCoded(t, b, b.Format(), &peerSink)
			a.SetRemote(addr(b.LocalPort()))
			b.SetRemote(addr(a.LocalPort()))

			defer func() {
				if t.Failed() {
					t.Log(debugFrames(&sink, a), debugFrames(&peerSink, b))
				}
			}()
			// The peer's code words to a's listener: 25 frames, of which a
			// loaded machine may drop some (a pacer late by more than five
			// frames skips them, a late packet is concealed); decoded,
			// resampled and encoded again none would arrive as sent.
			in := codeFrames(rand.New(rand.NewPCG(11, 12)), 25)
			b.Playout().WriteCoded("peer", tc.settle, bytes.Join(in, nil))
			require.Eventually(t, func() bool {
				got, _ := sink.frames()
				return framesFound(got, in, func(f []byte) []byte {
					if tc.transcodedBothWays {
						return PCMU.Transcode(nil, tc.settle, f)
					}
					return f
				}) >= 10
			}, 5*time.Second, 10*time.Millisecond, "a's listener did not get the peer's code words")

			// a's writer's code words to the peer.
			out := codeFrames(rand.New(rand.NewPCG(13, 14)), 25)
			w.Write("relay", bytes.Join(out, nil))
			defer func() {
				if t.Failed() {
					t.Log(debugFrames(&peerSink, b), debugFrames(&sink, a))
				}
			}()
			require.Eventually(t, func() bool {
				got, _ := peerSink.frames()
				return framesFound(got, out, func(f []byte) []byte {
					if tc.transcodedBothWays {
						return tc.settle.Transcode(nil, PCMU, f)
					}
					return f
				}) >= 10
			}, 5*time.Second, 10*time.Millisecond, "the peer did not get the writer's code words")
		})
	}
}

// codeFrames are n frames of 160 bytes, each holding every code word in
// its own order.
func codeFrames(rng *rand.Rand, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = everyCode(rng, 160)
	}
	return out
}

// framesFound counts the frames of sent that arrived, as conv makes
// them, among the played frames of got.
func framesFound(got []codedFrame, sent [][]byte, conv func([]byte) []byte) int {
	n := 0
	for _, f := range sent {
		if indexOfFrame(got, codedFrame{st: FramePlayed, payload: conv(f)}) >= 0 {
			n++
		}
	}
	return n
}

// TestPlayoutRecode: audio queued as PCM at 24 kHz before the answer is
// converted when the playout becomes a coded one, not dropped: its items
// and length are kept, the pacer reads it as code words, and the filler
// goes on in the new form.
func TestPlayoutRecode(t *testing.T) {
	q := NewPlayoutAt(24000)
	q.Write("greeting", tone(440, 24000, 2400, 8000)) // 100 ms
	q.Write("next", tone(440, 24000, 1200, 8000))     // 50 ms
	got, _ := q.Read(nil, 480)                        // 20 ms played
	require.Len(t, got, 480)
	loop, err := NewLoop(tone(300, 8000, 800, 8000), 8000)
	require.NoError(t, err)
	q.SetFiller(loop)

	q.recodeTo(PCMU, ClockRate)
	c, coded := q.Coded()
	require.True(t, coded)
	require.Equal(t, PCMU, c)
	require.Equal(t, 130*time.Millisecond, q.Len())
	words, speech := q.ReadCoded(nil, 160, PCMU)
	require.True(t, speech)
	amp, _ := fitTone(PCMU.DecodeFrame(nil, words), 440, 8000)
	require.InDelta(t, 8000, amp, 400, "the queued tone, converted")
	item, ms := q.Flush()
	require.Equal(t, "greeting", item)
	require.Equal(t, 40, ms, "20 ms before the change and 20 after")
	words, speech = q.ReadCoded(nil, 160, PCMU)
	require.True(t, speech, "the filler plays on")
	amp, _ = fitTone(PCMU.DecodeFrame(nil, words), 300, 8000)
	require.Greater(t, amp, 4000.0)
}

func debugFrames(s *frameSink, a *Session) string {
	got, _ := s.frames()
	st := map[FrameStatus]int{}
	for _, f := range got {
		st[f.st]++
	}
	return fmt.Sprintf("%v %+v %s", st, a.Stats(), a)
}
