package media

import (
	"math"
	"testing"
	"time"

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

// allPairs is every supported conversion between different rates.
var allPairs = func() (p [][2]int) {
	rates := []int{8000, 16000, 24000, 48000}
	for _, a := range rates {
		for _, b := range rates {
			if a != b {
				p = append(p, [2]int{a, b})
			}
		}
	}
	return p
}()

// TestResamplerPassband sweeps the passband (0.85 of the lower rate's
// Nyquist frequency: 3.4 kHz at 8 kHz) every 1/40 of it: every tone
// passes within 0.1 dB and everything else in the output (images of it
// when upsampling, aliases when downsampling, rounding) is >= 60 dB below.
func TestResamplerPassband(t *testing.T) {
	const amp = 20000.0
	for _, p := range allPairs {
		r, err := NewResampler(p[0], p[1])
		require.NoError(t, err)
		top := passFraction * float64(min(p[0], p[1])) / 2
		worstGain, worstRes := 0.0, -200.0
		for i := 1; i <= 40; i++ {
			f := top * float64(i) / 40
			r.Reset()
			out := r.Process(nil, tone(f, p[0], p[0]/4, amp))
			got, res := fitTone(settle(out, p[1]), f, p[1])
			ripple, resDB := db(got/amp), db(res/got)
			require.InDelta(t, 0, ripple, 0.1, "%v %v Hz: gain %.3f dB", r, f, ripple)
			require.Less(t, resDB, -60.0, "%v %v Hz: residual %.1f dB", r, f, resDB)
			if math.Abs(ripple) > math.Abs(worstGain) {
				worstGain = ripple
			}
			worstRes = max(worstRes, resDB)
		}
		t.Logf("%v: worst gain %+.3f dB, worst residual %.1f dB, delay %v, taps %d", r, worstGain, worstRes, r.Delay(), r.Taps())
	}
}

// TestResamplerAliasRejection sweeps every 50 Hz from the stopband edge
// (1.15 of the lower Nyquist frequency: 4.6 kHz at 8 kHz) to the input's
// Nyquist frequency: downsampling must leave >= 60 dB less of each tone
// (all of these would alias into the passband).
func TestResamplerAliasRejection(t *testing.T) {
	const amp = 30000.0
	for _, p := range allPairs {
		if p[0] < p[1] {
			continue
		}
		r, err := NewResampler(p[0], p[1])
		require.NoError(t, err)
		worst, worstF := -200.0, 0.0
		for f := stopFraction * float64(p[1]) / 2; f < float64(p[0])/2; f += 50 {
			r.Reset()
			out := r.Process(nil, tone(f, p[0], p[0]/4, amp))
			att := db(rms(settle(out, p[1])) / (amp / math.Sqrt2))
			require.Less(t, att, -60.0, "%v tone %v Hz only %.1f dB down", r, f, att)
			if att > worst {
				worst, worstF = att, f
			}
		}
		t.Logf("%v: worst %.1f dB at %.0f Hz", r, worst, worstF)
	}
}

// TestResamplerInterpolationKeepsSamples checks the Nyquist design: when
// upsampling by an integer factor, every l-th output is an input sample,
// unchanged, Delay later.
func TestResamplerInterpolationKeepsSamples(t *testing.T) {
	for _, p := range [][2]int{{8000, 16000}, {8000, 24000}, {8000, 48000}, {16000, 48000}, {24000, 48000}} {
		r, err := NewResampler(p[0], p[1])
		require.NoError(t, err)
		src := tone(1234, p[0], p[0]/10, 30000)
		for i := range src {
			src[i] += int16(2000 * math.Sin(float64(i)*0.37))
		}
		out := r.Process(nil, src)
		l := p[1] / p[0]
		lag := int((r.Delay()*time.Duration(p[0]) + time.Second/2) / time.Second)
		require.InDelta(t, float64(lag)/float64(p[0]), r.Delay().Seconds(), 1e-6, "%v delay is whole input samples", r)
		for i := 0; i+lag < len(src); i++ {
			require.Equal(t, src[i], out[l*(i+lag)], "%v sample %d", r, i)
		}
	}
}

func TestResamplerFrameContinuity(t *testing.T) {
	pairs := append([][2]int{{24000, 24000}}, allPairs...)
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
