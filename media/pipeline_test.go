package media

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListenerWriterRoundTrip: a G.711 leg's audio reaches a PCM16
// consumer at 16 and 24 kHz through a listener's chain, and the
// consumer's audio comes back through a writer's chain, in deltas of odd
// byte lengths, as the tone it was.
func TestListenerWriterRoundTrip(t *testing.T) {
	src8 := source{codec: PCMU, rate: ClockRate, dec: "PCMU(decode)"}
	for _, rate := range []int{16000, 24000} {
		var model []byte
		l, err := newListener(nil, src8, PCM16(rate), func(b []byte) { model = append(model, b...) }, nil)
		require.NoError(t, err)
		q := NewPlayout()
		w, err := NewWriter(q, PCM16(rate), WriterOptions{})
		require.NoError(t, err)

		// Phone -> model: 1 s of a 1 kHz tone in 20 ms frames.
		tn := tone(1000, 8000, 8000, 10000)
		for i := 0; i < len(tn); i += 160 {
			l.push(nil, Codec{}, tn[i:i+160])
		}
		require.Len(t, model, 2*rate)
		amp, _ := fitTone(settle(DecodePCM16LE(nil, model), rate), 1000, rate)
		require.InDelta(t, 10000, amp, 30)

		// Model -> phone, in deltas of odd byte lengths (samples split across writes).
		for i := 0; i < len(model); i += 1001 {
			w.Write("item", model[i:min(i+1001, len(model))])
		}
		back, speech := q.Read(nil, 8000)
		require.True(t, speech)
		amp, res := fitTone(settle(back[:7900], 8000), 1000, 8000)
		require.InDelta(t, 10000, amp, 30)
		require.Less(t, db(res/amp), -50.0)
	}
	l, err := newListener(nil, src8, PCM16(24000), func([]byte) {}, nil)
	require.NoError(t, err)
	w, err := NewWriter(NewPlayout(), PCM16(24000), WriterOptions{})
	require.NoError(t, err)
	require.Equal(t, "PCMU(decode) -> Resample(8k->24k) -> PCM16LE(24k)", l.String())
	require.Equal(t, "PCM16LE(24k) -> Resample(24k->8k) -> Playout", w.String())
	_, err = newListener(nil, src8, PCM16(44100), func([]byte) {}, nil)
	require.ErrorIs(t, err, errBadFormat)
	_, err = NewWriter(NewPlayout(), Format{Encoding: "gsm", Rate: 8000}, WriterOptions{})
	require.ErrorIs(t, err, errBadFormat)
}

// TestLoopFillsPlayout: a playout with a filler plays the loop whenever
// its queue runs short, wrapping around, in its own form (G.711 code
// words here); queued audio goes first; nil stops the loop.
func TestLoopFillsPlayout(t *testing.T) {
	music := tone(440, 8000, 400, 8000) // 50 ms
	loop, err := NewLoop(music, 8000)
	require.NoError(t, err)
	q := NewCodedPlayout(PCMA)
	q.SetFiller(loop)
	want := PCMA.EncodeFrame(nil, music)
	got, speech := q.ReadCoded(nil, 160, PCMA)
	require.True(t, speech)
	require.Equal(t, want[:160], got)
	got, _ = q.ReadCoded(nil, 320, PCMA) // wraps: 240 left, then from the start
	require.Equal(t, append(append([]byte(nil), want[160:]...), want[:80]...), got)

	prompt := tone(1000, 8000, 160, 8000)
	q.Write("prompt", prompt)
	got, _ = q.ReadCoded(nil, 240, PCMA)
	require.Equal(t, PCMA.EncodeFrame(nil, prompt), got[:160], "queued audio first")
	require.Equal(t, want[80:160], got[160:], "then the loop where it was")
	require.Zero(t, q.Len(), "the loop is not queued audio")

	q.SetFiller(nil)
	got, speech = q.ReadCoded(nil, 160, PCMA)
	require.False(t, speech)
	require.Equal(t, bytesOf(PCMA.SilenceByte(), 160), got)

	_, err = NewLoop(music[:100], 8000)
	require.Error(t, err, "shorter than a frame")
	_, err = NewLoop(music, 11025)
	require.ErrorIs(t, err, errBadFormat)
}
