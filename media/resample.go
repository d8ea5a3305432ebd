package media

import (
	"fmt"
	"math"
	"time"
)

// Resampler design. The prototype low-pass runs at the common rate
// inRate*L = outRate*M. Its passband reaches passFraction of the lower
// rate's Nyquist frequency with < 0.1 dB ripple; its stopband starts at
// stopFraction of it and is attenuated by at least stopbandDB. For 8 kHz
// that is a flat 0–3.4 kHz (the telephone band) and >= 60 dB from 4.6 kHz:
// every component that would alias (downsampling) or image (upsampling)
// into the telephone band is rejected by >= 60 dB.
const (
	passFraction = 0.85 // 3.4 kHz of 4 kHz
	stopFraction = 1.15 // 4.6 kHz of 4 kHz
	stopbandDB   = 66.0 // design target, 6 dB of margin over the 60 dB requirement
)

// Resampler converts mono 16-bit PCM between two rates with a polyphase
// windowed-sinc (Kaiser) filter. It keeps its state across calls, so a
// stream processed frame by frame gives exactly the same samples as the
// whole stream processed at once. A Resampler is not safe for concurrent use.
type Resampler struct {
	inRate, outRate int
	l, m, k         int       // up factor, down factor, taps per phase
	coef            []float32 // l phases of k taps, each stored reversed
	ilv             []float32 // the same taps interleaved: tap j of phase p at j*l+p
	buf             []float32 // k-1 history samples followed by the current input
	t               int       // next output position, in units of 1/l input samples, relative to the current input
	delay           time.Duration
}

// NewResampler returns a resampler from inRate to outRate. Supported rates
// are 8000, 16000, 24000 and 48000 Hz (any pair, including equal rates,
// which copies).
func NewResampler(inRate, outRate int) (*Resampler, error) {
	for _, r := range []int{inRate, outRate} {
		switch r {
		case 8000, 16000, 24000, 48000:
		default:
			return nil, fmt.Errorf("resampler %d->%d: %w: %d", inRate, outRate, errBadRate, r)
		}
	}
	g := gcd(inRate, outRate)
	r := &Resampler{inRate: inRate, outRate: outRate, l: outRate / g, m: inRate / g}
	if r.l == 1 && r.m == 1 {
		return r, nil
	}
	r.design()
	return r, nil
}

// design builds the Kaiser-windowed sinc prototype and splits it into phases.
func (r *Resampler) design() {
	common := float64(r.inRate * r.l)
	nyq := float64(min(r.inRate, r.outRate)) / 2
	fp, fs := passFraction*nyq, stopFraction*nyq
	dw := 2 * math.Pi * (fs - fp) / common
	// Kaiser's formulas for the length and beta of a filter with the given
	// attenuation and transition width.
	beta := 0.1102 * (stopbandDB - 8.7)
	n := int(math.Ceil((stopbandDB-7.95)/(2.285*dw))) + 1
	k := (n + r.l - 1) / r.l
	k = (k + 3) &^ 3 // multiple of 4 for the unrolled dot product
	n = k * r.l
	fc := (fp + fs) / 2 / common // cutoff in cycles per sample
	h := make([]float64, n)
	mid := float64(n-1) / 2
	sum := 0.0
	for i := range h {
		x := float64(i) - mid
		s := 2 * fc
		if x != 0 {
			s = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		u := 2*float64(i)/float64(n-1) - 1
		w := bessel0(beta*math.Sqrt(max(0, 1-u*u))) / bessel0(beta)
		h[i] = s * w
		sum += h[i]
	}
	gain := float64(r.l) / sum // unity gain at DC after zero-stuffing
	r.k = k
	r.coef = make([]float32, r.l*k)
	for p := 0; p < r.l; p++ {
		for j := 0; j < k; j++ {
			r.coef[p*k+j] = float32(h[(k-1-j)*r.l+p] * gain)
		}
	}
	r.ilv = make([]float32, r.l*k)
	for p := 0; p < r.l; p++ {
		for j := 0; j < k; j++ {
			r.ilv[j*r.l+p] = r.coef[p*k+j]
		}
	}
	r.buf = make([]float32, k-1, k-1+960)
	r.delay = time.Duration(float64(n-1) / 2 / common * float64(time.Second))
}

// String names the stage, e.g. "Resample(8k->24k)".
func (r *Resampler) String() string {
	return fmt.Sprintf("Resample(%dk->%dk)", r.inRate/1000, r.outRate/1000)
}

// InRate returns the input sampling rate in Hz.
func (r *Resampler) InRate() int { return r.inRate }

// OutRate returns the output sampling rate in Hz.
func (r *Resampler) OutRate() int { return r.outRate }

// Delay returns the group delay of the filter (it is linear phase, so the
// delay is the same at every frequency).
func (r *Resampler) Delay() time.Duration { return r.delay }

// Taps returns the number of filter taps evaluated per output sample.
func (r *Resampler) Taps() int { return r.k }

// Reset clears the filter history, as at the start of a new stream.
func (r *Resampler) Reset() {
	r.buf = r.buf[:max(r.k-1, 0)]
	clear(r.buf)
	r.t = 0
}

// Process appends the resampled form of src to dst and returns the extended
// slice. Output for a frame of n input samples is n*out/in samples when n is
// a multiple of in/gcd; otherwise the fractional position carries over to
// the next call. It does not allocate once dst and the internal buffer have
// capacity for a frame.
func (r *Resampler) Process(dst, src []int16) []int16 {
	if r.k == 0 {
		return append(dst, src...)
	}
	hist := r.k - 1
	r.buf = grow(r.buf[:hist], len(src))
	in := r.buf[hist:]
	for i, s := range src {
		in[i] = float32(s)
	}
	end := len(src) * r.l
	outN := 0
	if r.t < end {
		outN = (end - r.t + r.m - 1) / r.m
	}
	base := len(dst)
	dst = grow(dst, outN)
	out := dst[base:]
	switch {
	case r.m == 1 && r.l == 2 && r.t == 0:
		r.up2(out, len(src))
	case r.m == 1 && r.l == 3 && r.t == 0:
		r.up3(out, len(src))
	default:
		i, p := r.t/r.l, r.t%r.l
		for o := range out {
			out[o] = clamp16(dot(r.coef[p*r.k:(p+1)*r.k], r.buf[i:i+r.k]))
			p += r.m
			for p >= r.l {
				p -= r.l
				i++
			}
		}
	}
	r.t += outN*r.m - end
	copy(r.buf, r.buf[len(src):len(src)+hist])
	r.buf = r.buf[:hist]
	return dst
}

// up2 upsamples by 2: both phases of one input window are computed together
// so every history sample is loaded once.
func (r *Resampler) up2(out []int16, n int) {
	k := r.k
	c := r.ilv[: 2*k : 2*k]
	out = out[:2*n]
	for i := 0; i < n; i++ {
		x := r.buf[i : i+k : i+k]
		var a0, a1, b0, b1 float32
		for j := 0; j+2 <= k; j += 2 {
			cc := c[2*j : 2*j+4 : 2*j+4]
			xx := x[j : j+2 : j+2]
			a0 += cc[0] * xx[0]
			b0 += cc[1] * xx[0]
			a1 += cc[2] * xx[1]
			b1 += cc[3] * xx[1]
		}
		out[2*i] = clamp16(a0 + a1)
		out[2*i+1] = clamp16(b0 + b1)
	}
}

// up3 upsamples by 3 like up2.
func (r *Resampler) up3(out []int16, n int) {
	k := r.k
	c := r.ilv[: 3*k : 3*k]
	out = out[:3*n]
	for i := 0; i < n; i++ {
		x := r.buf[i : i+k : i+k]
		var a0, a1, b0, b1, c0, c1 float32
		for j := 0; j+2 <= k; j += 2 {
			cc := c[3*j : 3*j+6 : 3*j+6]
			xx := x[j : j+2 : j+2]
			a0 += cc[0] * xx[0]
			b0 += cc[1] * xx[0]
			c0 += cc[2] * xx[0]
			a1 += cc[3] * xx[1]
			b1 += cc[4] * xx[1]
			c1 += cc[5] * xx[1]
		}
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0] = clamp16(a0 + a1)
		o[1] = clamp16(b0 + b1)
		o[2] = clamp16(c0 + c1)
	}
}

// dot is an unrolled float32 dot product; len(c) is a multiple of 4.
func dot(c, x []float32) float32 {
	x = x[:len(c)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(c); i += 8 {
		cc := c[i : i+8 : i+8]
		xx := x[i : i+8 : i+8]
		s0 += cc[0] * xx[0]
		s1 += cc[1] * xx[1]
		s2 += cc[2] * xx[2]
		s3 += cc[3] * xx[3]
		s4 += cc[4] * xx[4]
		s5 += cc[5] * xx[5]
		s6 += cc[6] * xx[6]
		s7 += cc[7] * xx[7]
	}
	if i < len(c) {
		cc := c[i : i+4 : i+4]
		xx := x[i : i+4 : i+4]
		s0 += cc[0] * xx[0]
		s1 += cc[1] * xx[1]
		s2 += cc[2] * xx[2]
		s3 += cc[3] * xx[3]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// clamp16 rounds to the nearest int16, saturating.
func clamp16(v float32) int16 {
	if v >= 32767 {
		return 32767
	}
	if v <= -32768 {
		return -32768
	}
	if v < 0 {
		return int16(v - 0.5)
	}
	return int16(v + 0.5)
}

// bessel0 is the zeroth-order modified Bessel function of the first kind.
func bessel0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 50; k++ {
		term *= (x / (2 * float64(k))) * (x / (2 * float64(k)))
		sum += term
		if term < sum*1e-12 {
			break
		}
	}
	return sum
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
