package opus

import (
	"fmt"
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

// TestFEC: a lost packet rebuilt from the in-band FEC data of the next
// one is closer to what the lost packet decodes to than the decoder's
// loss concealment is (the encoder puts LBRR data in each packet, RFC
// 6716 section 2.1.7, since it expects some loss).
func TestFEC(t *testing.T) {
	const rate, frame, n, lost = 24000, 480, 40, 30
	enc, err := NewEncoder(rate, 32000)
	require.NoError(t, err)
	defer enc.Close()
	pkts := make([][]byte, n)
	for f := range pkts {
		pcm := make([]int16, frame)
		for i := range pcm {
			x := float64(f*frame+i) / rate
			// A sweeping tone, so repeating the past does not predict it.
			pcm[i] = int16(8000 * math.Sin(2*math.Pi*(300*x+400*x*x)))
		}
		pkts[f], err = enc.Encode(nil, pcm)
		require.NoError(t, err)
	}
	decode := func(mode string) []int16 {
		dec, err := NewDecoder(rate)
		require.NoError(t, err)
		defer dec.Close()
		var out []int16
		for f := 0; f <= lost; f++ {
			switch {
			case f < lost || mode == "none":
				out, err = dec.Decode(out[:0], pkts[f], 0)
			case mode == "fec":
				out, err = dec.DecodeFEC(out[:0], pkts[f+1], frame)
			default:
				out, err = dec.Decode(out[:0], nil, frame)
			}
			require.NoError(t, err)
		}
		require.Len(t, out, frame)
		return out
	}
	ref, fec, plc := decode("none"), decode("fec"), decode("plc")
	errOf := func(x []int16) float64 {
		var e float64
		for i := range x {
			d := float64(x[i]) - float64(ref[i])
			e += d * d
		}
		return e
	}
	t.Logf("error energy of the rebuilt frame: FEC %.3g, PLC %.3g", errOf(fec), errOf(plc))
	require.Less(t, errOf(fec), errOf(plc))
}

// BenchmarkEncode20ms is one 20 ms frame of a sweep at 24 kHz, 32 kbit/s,
// by encoder complexity.
func BenchmarkEncode20ms(b *testing.B) {
	pcm := make([]int16, 480*50)
	for i := range pcm {
		x := float64(i) / 24000
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*(300*x+400*x*x)))
	}
	for _, c := range []int{-1, 5, 3} {
		b.Run(fmt.Sprintf("complexity=%d", c), func(b *testing.B) {
			enc, err := NewEncoder(24000, 32000)
			require.NoError(b, err)
			defer enc.Close()
			if c >= 0 {
				require.NoError(b, enc.SetComplexity(c))
			}
			b.Logf("complexity %d", enc.Complexity())
			out := make([]byte, 0, 1500)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				f := i % 50
				out, _ = enc.Encode(out[:0], pcm[480*f:480*(f+1)])
			}
		})
	}
}
