package media

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSessionSettleCodec: a deferred session starts offering Opus at
// 24 kHz, with a listener and a writer made before the answer; the
// answer settles G.722, PCMU or Opus. The peer (a plain session of the
// settled codec) hears the deferred session's tone and the deferred
// session's listener hears the peer's, each side's timestamps advance at
// the settled codec's clock, and the listener and the writer made before
// the answer keep working.
func TestSessionSettleCodec(t *testing.T) {
	for _, c := range []Codec{G722, PCMU, PCMA, opusPT} {
		t.Run(c.Name, func(t *testing.T) {
			pool := newPool(t)
			var tap countTap
			var heard, peerHeard audioSink
			var lens sync24
			a := newListeningSession(t, pool, SessionOptions{Codec: opusPT, Deferred: true, Rate: 24000, Tap: &tap}, 24000,
				func(pcm []int16, st FrameStatus) { lens.add(len(pcm)); heard.onAudio(pcm, st) })
			require.Equal(t, PCM16(24000), a.Format(), "a deferred session's audio is PCM at its rate")
			w, err := a.Writer(PCM16(24000), WriterOptions{})
			require.NoError(t, err)
			require.NoError(t, a.SettleCodec(c, EncoderOptions{}))
			require.NoError(t, a.SettleCodec(c, EncoderOptions{}), "the same codec again")
			if f, ok := map[string]Format{"PCMU": FormatPCMU, "PCMA": FormatPCMA}[c.Name]; ok {
				require.Equal(t, f, a.Format(), "settled on G.711, the session's audio is its code words")
			} else {
				require.Equal(t, PCM16(24000), a.Format())
			}

			b := newListeningSession(t, pool, SessionOptions{Codec: c}, 8000, peerHeard.onAudio)
			a.SetRemote(addr(b.LocalPort()))
			b.SetRemote(addr(a.LocalPort()))
			w.Write("greeting", AppendPCM16LE(nil, tone(440, 24000, 24000, 8000)))
			bw, err := b.Writer(PCM16(8000), WriterOptions{})
			require.NoError(t, err)
			bw.WritePCM("peer", tone(600, 8000, 8000, 8000))
			require.Eventually(t, func() bool {
				n, e := peerHeard.get()
				m, f := heard.get()
				return n >= 20 && e > 1000 && m >= 20 && f > 1000
			}, 5*time.Second, 10*time.Millisecond)
			require.Equal(t, 480, lens.get(), "the listener still gets 20 ms at 24 kHz")
			require.Equal(t, c.Name, a.Pacer().Codec().Name)
			require.Zero(t, b.Stats().Strangers)
			require.Zero(t, a.Stats().Ignored, "every packet of the settled codec is taken")
			in, out := tap.get()
			require.Positive(t, in)
			require.Positive(t, out)
			require.Equal(t, 160, tap.lastIn(), "the tap counts 8 kHz samples")
			seq, ts := a.Pacer().Last()
			var (
				seq2 uint16
				ts2  uint32
			)
			require.Eventually(t, func() bool { // a few packets more
				seq2, ts2 = a.Pacer().Last()
				return seq2-seq >= 5
			}, 2*time.Second, 5*time.Millisecond)
			// The settled codec's ticks per packet; a loaded machine's pacer
			// skips frames it is too late for, which advance the timestamp
			// by whole frames without a packet.
			step := uint32(c.ClockRate / 50)
			require.Zero(t, (ts2-ts)%step, "the settled codec's ticks per packet: %d over %d packets", ts2-ts, seq2-seq)
			require.GreaterOrEqual(t, ts2-ts, uint32(seq2-seq)*step, "the settled codec's ticks per packet")
		})
	}
}

// TestSettleCodecNotDeferred: a session made for one codec keeps it.
func TestSettleCodecNotDeferred(t *testing.T) {
	pool := newPool(t)
	s := newSession(t, pool, SessionOptions{Codec: PCMU})
	require.ErrorIs(t, s.SettleCodec(G722, EncoderOptions{}), errNotDeferred)
}

// TestDeferredSessionG711Listener: a deferred session's listeners take
// its audio as PCM whatever the wire carries, so one asking for G.711
// (a leg relaying it to another leg's phone) gets its audio encoded, not
// the wire's code words taken for the other law. A placed call offered
// PCMA first and answered in PCMU relayed the peer's silence (µ-law
// 0xFF) as A-law 0xFF, a constant 848 the other phone heard as a hum
// (TestTransferWarmBaresip).
func TestDeferredSessionG711Listener(t *testing.T) {
	for _, f := range []Format{FormatPCMU, FormatPCMA} {
		t.Run(f.String(), func(t *testing.T) {
			pool := newPool(t)
			a := newSession(t, pool, SessionOptions{Codec: PCMA, Deferred: true, Rate: ClockRate})
			require.NoError(t, a.SettleCodec(PCMU, EncoderOptions{}))
			var mu sync.Mutex
			var got []byte
			l, err := a.Listen(f, func(b []byte) {
				mu.Lock()
				got = append(got, b...)
				mu.Unlock()
			})
			require.NoError(t, err)
			require.NotContains(t, l.String(), "PCM -> ", "a relay of code words the wire may change")
			b := newSession(t, pool, SessionOptions{Codec: PCMU}) // sends silence: nothing queued
			a.SetRemote(addr(b.LocalPort()))
			b.SetRemote(addr(a.LocalPort()))
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) >= 1600
			}, 5*time.Second, 10*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			law, _ := f.G711()
			for i, v := range law.DecodeFrame(nil, got) {
				require.Less(t, abs(int(v)), 16, "sample %d of the peer's silence", i)
			}
		})
	}
}
