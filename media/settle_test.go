package media

import (
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
			require.Equal(t, PCM16(24000), a.Format())

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
			time.Sleep(100 * time.Millisecond)
			seq2, ts2 := a.Pacer().Last()
			require.Equal(t, uint32(seq2-seq)*uint32(c.ClockRate/50), ts2-ts, "the settled codec's ticks per packet")
		})
	}
}

// TestSettleCodecNotDeferred: a session made for one codec keeps it.
func TestSettleCodecNotDeferred(t *testing.T) {
	pool := newPool(t)
	s := newSession(t, pool, SessionOptions{Codec: PCMU})
	require.ErrorIs(t, s.SettleCodec(G722, EncoderOptions{}), errNotDeferred)
}
