package opus

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tone survives an encode/decode round trip: the decoded signal keeps
// its energy and correlates with the input once the codec's delay is
// accounted for.
func TestRoundTrip(t *testing.T) {
	const rate, frame = 24000, 480
	enc, err := NewEncoder(rate, 32000)
	require.NoError(t, err)
	defer enc.Close()
	dec, err := NewDecoder(rate)
	require.NoError(t, err)
	defer dec.Close()

	var in, out []int16
	for f := 0; f < 50; f++ {
		pcm := make([]int16, frame)
		for i := range pcm {
			n := f*frame + i
			pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(n)/rate))
		}
		in = append(in, pcm...)
		pkt, err := enc.Encode(nil, pcm)
		require.NoError(t, err)
		require.NotEmpty(t, pkt)
		out, err = dec.Decode(out, pkt, 0)
		require.NoError(t, err)
	}
	require.Len(t, out, len(in))
	// Best correlation over a small lag range (libopus's lookahead).
	best := 0.0
	for lag := 0; lag < 400; lag++ {
		var xy, xx, yy float64
		for i := 4800; i < len(in)-lag; i++ {
			x, y := float64(in[i]), float64(out[i+lag])
			xy, xx, yy = xy+x*y, xx+x*x, yy+y*y
		}
		if c := xy / math.Sqrt(xx*yy); c > best {
			best = c
		}
	}
	require.Greater(t, best, 0.9, "decoded tone correlates with the input")

	// Concealment of a lost packet gives a frame of samples.
	plc, err := dec.Decode(nil, nil, frame)
	require.NoError(t, err)
	require.Len(t, plc, frame)
}

func TestBadInput(t *testing.T) {
	_, err := NewEncoder(44100, 0)
	require.ErrorIs(t, err, ErrRate)
	_, err = NewDecoder(11025)
	require.ErrorIs(t, err, ErrRate)
	dec, err := NewDecoder(24000)
	require.NoError(t, err)
	defer dec.Close()
	_, err = dec.Decode(nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff}, 0)
	require.Error(t, err, "garbage is refused, not crashed on")
	enc, err := NewEncoder(24000, 0)
	require.NoError(t, err)
	_, err = enc.Encode(nil, make([]int16, 123))
	require.Error(t, err, "a frame of no valid duration is refused")
	require.NoError(t, enc.Close())
	require.NoError(t, enc.Close())
}

func BenchmarkEncode20ms(b *testing.B) {
	enc, _ := NewEncoder(24000, 32000)
	defer enc.Close()
	pcm := make([]int16, 480)
	for i := range pcm {
		pcm[i] = int16(5000 * math.Sin(float64(i)/5))
	}
	var dst []byte
	for b.Loop() {
		dst, _ = enc.Encode(dst[:0], pcm)
	}
}
