package media

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// g722TestSignal is 1.5 s at 16 kHz: a chirp from 50 Hz to 7.9 kHz under
// a slow tremolo, plus a 300 Hz tone with a rising then falling level, at
// most about -6 dBFS (no clipping: the reference implementation wraps
// around where this one saturates).
func g722TestSignal() []int16 {
	const n = 24000
	out := make([]int16, n)
	for i := range out {
		t := float64(i) / G722Rate
		chirp := math.Sin(2 * math.Pi * (50*t + (7850/3.0)*t*t))
		trem := 0.5 + 0.5*math.Sin(2*math.Pi*3*t)
		tone := math.Sin(2*math.Pi*300*t) * math.Sin(math.Pi*t/1.5)
		out[i] = int16(9000*chirp*trem + 7000*tone)
	}
	return out
}

// Digests of the reference implementation's output for g722TestSignal
// (spandsp 0.0.6 from Debian: g722_encode_init(64000, 0), then
// g722_decode_init(64000, 0) on its code), computed once with a small C
// program linked against libspandsp.
const (
	g722RefCodeSHA256 = "4a34b1ce36030add23e32e31ebc62f51bf13205da6eccc49d7c3ee6508cffe6a"
	g722RefPCMSHA256  = "2b9d1ebdbd21f1fbc119741de24dca5a0b62aee0bbcebc74eec7dcb3ffc27bca"
)

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestG722MatchesReference: the encoder's code and the decoder's PCM are
// bit-exact with the reference implementation's.
func TestG722MatchesReference(t *testing.T) {
	code := NewG722Encoder().Encode(nil, g722TestSignal())
	require.Len(t, code, 12000)
	require.Equal(t, g722RefCodeSHA256, sha(code), "encoder output")
	pcm := NewG722Decoder().Decode(nil, code)
	require.Len(t, pcm, 24000)
	require.Equal(t, g722RefPCMSHA256, sha(AppendPCM16LE(nil, pcm)), "decoder output")
}

// TestG722KeepsTheUpperBand: a 6 kHz tone (above G.711's band) survives
// the round trip at nearly its level, and a loud signal saturates instead
// of wrapping around.
func TestG722KeepsTheUpperBand(t *testing.T) {
	in := make([]int16, 3200)
	for i := range in {
		in[i] = int16(8000 * math.Sin(2*math.Pi*6000*float64(i)/G722Rate))
	}
	out := NewG722Decoder().Decode(nil, NewG722Encoder().Encode(nil, in))
	require.InDelta(t, RMS(in[1600:]), RMS(out[1600:]), 0.2*RMS(in[1600:]))

	loud := make([]int16, 3200)
	for i := range loud {
		loud[i] = int16(32700 * math.Sin(2*math.Pi*200*float64(i)/G722Rate))
	}
	out = NewG722Decoder().Decode(nil, NewG722Encoder().Encode(nil, loud))
	for i := 1; i < len(out); i++ {
		require.Less(t, math.Abs(float64(out[i])-float64(out[i-1])), 8000.0, "no wrap-around at %d", i)
	}
}

func FuzzG722Decode(f *testing.F) {
	f.Add([]byte{0x00, 0xff, 0x7f, 0x80})
	f.Fuzz(func(t *testing.T, code []byte) {
		out := NewG722Decoder().Decode(nil, code)
		require.Len(t, out, 2*len(code))
	})
}

func BenchmarkG722Encode20ms(b *testing.B) {
	in := g722TestSignal()[:320]
	e := NewG722Encoder()
	dst := make([]byte, 0, 160)
	for b.Loop() {
		dst = e.Encode(dst[:0], in)
	}
}

func BenchmarkG722Decode20ms(b *testing.B) {
	code := NewG722Encoder().Encode(nil, g722TestSignal()[:320])
	d := NewG722Decoder()
	dst := make([]int16, 0, 320)
	for b.Loop() {
		dst = d.Decode(dst[:0], code)
	}
}
