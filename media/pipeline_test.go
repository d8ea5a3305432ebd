package media

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPipelinesRoundTrip(t *testing.T) {
	for _, rate := range []int{16000, 24000} {
		in, err := NewInboundPipeline(rate)
		require.NoError(t, err)
		q := NewPlayout()
		out, err := NewOutboundPipeline(rate, q)
		require.NoError(t, err)

		// Phone -> model: 1 s of a 1 kHz tone in 20 ms frames.
		src := tone(1000, 8000, 8000, 10000)
		var model []byte
		for i := 0; i < len(src); i += 160 {
			model = in.Process(model, src[i:i+160])
		}
		require.Len(t, model, 2*rate)
		amp, _ := fitTone(settle(DecodePCM16LE(nil, model), rate), 1000, rate)
		require.InDelta(t, 10000, amp, 30)

		// Model -> phone, in deltas of odd byte lengths (samples split across writes).
		for i := 0; i < len(model); i += 1001 {
			out.Write("item", model[i:min(i+1001, len(model))])
		}
		back, speech := q.Read(nil, 8000)
		require.True(t, speech)
		amp, res := fitTone(settle(back[:7900], 8000), 1000, 8000)
		require.InDelta(t, 10000, amp, 30)
		require.Less(t, db(res/amp), -50.0)
	}
	in, _ := NewInboundPipeline(24000)
	out, _ := NewOutboundPipeline(24000, NewPlayout())
	require.Equal(t, "Resample(8k->24k) -> PCM16LE", in.String())
	require.Equal(t, "PCM16LE -> Resample(24k->8k) -> Playout", out.String())
	_, err := NewInboundPipeline(44100)
	require.ErrorIs(t, err, errBadRate)
}
