package media

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// tone returns n samples of a sine at freq Hz sampled at rate.
func tone(freq float64, rate, n int, amp float64) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(math.Round(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return out
}

// fitTone least-squares fits a sinusoid at freq to x and returns its
// amplitude and the RMS of what is left (images, aliases, noise).
func fitTone(x []int16, freq float64, rate int) (amp, residual float64) {
	var ss, cc, sc, sx, cx float64
	for i, v := range x {
		w := 2 * math.Pi * freq * float64(i) / float64(rate)
		s, c := math.Sin(w), math.Cos(w)
		ss += s * s
		cc += c * c
		sc += s * c
		sx += s * float64(v)
		cx += c * float64(v)
	}
	det := ss*cc - sc*sc
	a := (sx*cc - cx*sc) / det
	b := (cx*ss - sx*sc) / det
	var res float64
	for i, v := range x {
		w := 2 * math.Pi * freq * float64(i) / float64(rate)
		d := float64(v) - a*math.Sin(w) - b*math.Cos(w)
		res += d * d
	}
	return math.Hypot(a, b), math.Sqrt(res / float64(len(x)))
}

func rms(x []int16) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

func db(x float64) float64 { return 20 * math.Log10(x) }

// settle drops the filter's start-up transient.
func settle(x []int16, rate int) []int16 { return x[rate/50:] }

func TestResamplerPassband(t *testing.T) {
	const amp = 20000.0
	pairs := [][2]int{{8000, 16000}, {8000, 24000}, {8000, 48000}, {16000, 8000}, {24000, 8000}, {48000, 8000}}
	for _, p := range pairs {
		for _, f := range []float64{300, 1000, 2500, 3400} {
			r, err := NewResampler(p[0], p[1])
			require.NoError(t, err)
			out := r.Process(nil, tone(f, p[0], p[0]/2, amp))
			got, res := fitTone(settle(out, p[1]), f, p[1])
			ripple := db(got / amp)
			// In-band tone passes flat; everything else in the output
			// (images of it when upsampling) is >= 60 dB below it.
			require.InDelta(t, 0, ripple, 0.1, "%v %v Hz: gain %.3f dB", r, f, ripple)
			require.Less(t, db(res/got), -60.0, "%v %v Hz: residual %.1f dB", r, f, db(res/got))
			t.Logf("%v %4.0f Hz: gain %+.3f dB, residual %.1f dB, delay %v, taps %d", r, f, ripple, db(res/got), r.Delay(), r.Taps())
		}
	}
}

func TestResamplerAliasRejection(t *testing.T) {
	const amp = 30000.0
	tests := []struct {
		in    int
		freqs []float64
	}{
		{16000, []float64{4600, 5000, 6000, 7000, 7900}},
		{24000, []float64{4600, 5000, 7000, 9000, 11900}},
		{48000, []float64{4600, 6000, 12000, 20000, 23900}},
	}
	for _, tt := range tests {
		r, err := NewResampler(tt.in, 8000)
		require.NoError(t, err)
		for _, f := range tt.freqs {
			r.Reset()
			out := r.Process(nil, tone(f, tt.in, tt.in/2, amp))
			att := db(rms(settle(out, 8000)) / (amp / math.Sqrt2))
			// Above 4.6 kHz every tone would alias into the 0–3.4 kHz band.
			require.Less(t, att, -60.0, "%v tone %v Hz only %.1f dB down", r, f, att)
			t.Logf("%v %5.0f Hz: %.1f dB", r, f, att)
		}
	}
}

func TestResamplerFrameContinuity(t *testing.T) {
	pairs := [][2]int{{8000, 16000}, {8000, 24000}, {16000, 8000}, {24000, 8000}, {24000, 24000}}
	for _, p := range pairs {
		src := tone(1234, p[0], p[0], 12000)
		for i := range src { // add a second tone so the signal is not periodic per frame
			src[i] += int16(3000 * math.Sin(float64(i)*0.37))
		}
		one, err := NewResampler(p[0], p[1])
		require.NoError(t, err)
		want := one.Process(nil, src)
		require.Len(t, want, len(src)*p[1]/p[0])

		for _, chunk := range []int{p[0] / 50, 7, 101} { // 20 ms frames and odd sizes
			r, err := NewResampler(p[0], p[1])
			require.NoError(t, err)
			var got []int16
			for i := 0; i < len(src); i += chunk {
				got = r.Process(got, src[i:min(i+chunk, len(src))])
			}
			require.Equal(t, want, got, "%v in chunks of %d", r, chunk)
		}
	}
}

func TestResamplerRejectsRates(t *testing.T) {
	_, err := NewResampler(8000, 44100)
	require.ErrorIs(t, err, errBadRate)
	r, err := NewResampler(8000, 24000)
	require.NoError(t, err)
	require.Equal(t, "Resample(8k->24k)", r.String())
	require.Greater(t, r.Delay().Microseconds(), int64(0))
}

func TestResamplerNoAllocPerFrame(t *testing.T) {
	up, _ := NewResampler(8000, 24000)
	down, _ := NewResampler(24000, 8000)
	in := tone(440, 8000, 160, 8000)
	mid := make([]int16, 0, 480)
	out := make([]int16, 0, 160)
	mid = up.Process(mid[:0], in)
	out = down.Process(out[:0], mid)
	allocs := testing.AllocsPerRun(100, func() {
		mid = up.Process(mid[:0], in)
		out = down.Process(out[:0], mid)
	})
	require.Zero(t, allocs)
	require.Len(t, out, 160)
}
