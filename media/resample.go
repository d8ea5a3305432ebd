package media

import (
	"fmt"
	"math"
	"sync"
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
//
// The prototype is a Nyquist (L-th band) filter: odd length, centred on a
// tap, cut off at the lower rate's Nyquist frequency, so every R-th tap
// from the centre is zero, R being the rate ratio. Two consequences make
// the phone paths cheap:
//   - interpolating by L, one phase in L is the input itself (copied), and
//     the other phases come in mirror-image pairs (phase p reversed is
//     phase L-p), so one pass over the folded window x[j]+x[2K-1-j],
//     x[j]-x[2K-1-j] yields both outputs of a pair with K multiplies each
//     instead of 2K;
//   - decimating by M, only the kept outputs are computed, the filter is
//     folded about its centre (h[d] = h[-d]: one multiply per two samples)
//     and the zero taps are skipped.
//
// Conversions where neither rate divides the other (16k<->24k) use the plain
// polyphase form.
type Resampler struct {
	inRate, outRate int
	l, m            int // up factor, down factor
	taps            int // nonzero taps per output sample
	buf             []float32
	rev             []float32 // buf reversed, so folded loops run forwards
	delay           time.Duration

	// interpolation by l (m == 1): window of 2*half input samples.
	half  int
	pairs []phasePair // phases p and l-p for 1 <= p < l/2
	mid   []float32   // phase l/2 when l is even (symmetric), else nil

	// decimation by m (l == 1): centre tap h0, and g[rho-1][j] = h[m*j+rho]
	// for the nonzero taps d = m*j+rho, rho = 1..m-1 (h[m*j] = 0).
	h0    float32
	g     [][]float32
	split []float32 // buf and rev split into m streams each (x[q], x[q+m], ...)

	// general l/m.
	k    int       // taps per phase
	coef []float32 // l phases of k taps, each stored reversed
	t    int       // next output position, in units of 1/l input samples, relative to the current input
}

// phasePair holds the folded coefficients of interpolation phases p and
// l-p: with S = sum sum[j]*(x[j]+x[2K-1-j]) and D = sum diff[j]*(x[j]-x[2K-1-j])
// over j < K, phase p is S+D and phase l-p is S-D.
type phasePair struct {
	sum, diff []float32
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
	key := [2]int{inRate, outRate}
	if d, ok := designs.Load(key); ok {
		return d.(*Resampler).clone(), nil
	}
	g := gcd(inRate, outRate)
	r := &Resampler{inRate: inRate, outRate: outRate, l: outRate / g, m: inRate / g}
	switch {
	case r.l == 1 && r.m == 1:
	case r.m == 1:
		r.designUp()
	case r.l == 1:
		r.designDown()
	default:
		r.designGeneral()
	}
	designs.Store(key, r.clone())
	return r, nil
}

// designs holds one pristine resampler per rate pair: every call's
// resamplers share its coefficients (read-only once designed), so a call
// costs its own buffers only, not a filter design and its tables.
var designs sync.Map // [2]int{in, out} -> *Resampler

// frame is the input a resampler's buffers hold from the start: 20 ms at
// its input rate (a larger piece grows them once).
func (r *Resampler) frame() int { return r.inRate / 50 }

// clone returns a resampler sharing r's coefficients with fresh state (r
// is pristine: nothing processed yet).
func (r *Resampler) clone() *Resampler {
	c := *r
	c.buf = make([]float32, len(r.buf), cap(r.buf))
	c.rev = make([]float32, 0, cap(r.rev))
	c.split = nil
	c.t = 0
	return &c
}

// kaiser returns the Kaiser window's beta and the prototype's half length c
// (the filter has 2c+1 taps at the common rate inRate*l) from Kaiser's
// formulas for the attenuation and transition width of this conversion.
func (r *Resampler) kaiser() (beta, fc float64, c int) {
	common := float64(r.inRate * r.l)
	nyq := float64(min(r.inRate, r.outRate)) / 2
	fp, fs := passFraction*nyq, stopFraction*nyq
	dw := 2 * math.Pi * (fs - fp) / common
	beta = 0.1102 * (stopbandDB - 8.7)
	n := int(math.Ceil((stopbandDB-7.95)/(2.285*dw))) + 1
	fc = (fp + fs) / 2 / common // = nyq/common: a Nyquist filter
	return beta, fc, n / 2
}

// prototype returns h[d] for d = 0..c of the symmetric Kaiser-windowed
// sinc of half length c (h[-d] = h[d]), unnormalised.
func prototype(beta, fc float64, c int) []float64 {
	h := make([]float64, c+1)
	for d := range h {
		s := 2 * fc
		if d != 0 {
			x := float64(d)
			s = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		u := float64(d) / float64(c)
		h[d] = s * bessel0(beta*math.Sqrt(max(0, 1-u*u))) / bessel0(beta)
	}
	return h
}

// at returns tap d of a symmetric prototype given by its half h[0..c].
func at(h []float64, d int) float64 {
	if d < 0 {
		d = -d
	}
	if d >= len(h) {
		return 0
	}
	return h[d]
}

// designUp builds the folded interpolation phases. Output phase p of
// input i is sum over r of x[i-r]*h[l*r+p]; with the window x[i+1-K..i+K]
// (j = 0..2K-1, r = K-1-j) every phase fits, phase 0 is x[i] (h[l*r] = 0
// for r != 0), and phase l-p is phase p reversed.
func (r *Resampler) designUp() {
	beta, fc, c := r.kaiser()
	l := r.l
	half := (c-1+l-1)/l + 1 // smallest K with l*(K-1)+1 >= c
	c = l*(half-1) + 1      // use the whole window
	h := prototype(beta, fc, c)
	r.half = half
	phase := func(p int) []float64 { // alpha[j] for j = 0..2K-1, unit DC gain
		a := make([]float64, 2*half)
		sum := 0.0
		for j := range a {
			a[j] = at(h, l*(half-1-j)+p)
			sum += a[j]
		}
		for j := range a {
			a[j] /= sum
		}
		return a
	}
	for p := 1; 2*p < l; p++ {
		a := phase(p)
		pp := phasePair{sum: make([]float32, half), diff: make([]float32, half)}
		for j := 0; j < half; j++ {
			pp.sum[j] = float32((a[j] + a[2*half-1-j]) / 2)
			pp.diff[j] = float32((a[j] - a[2*half-1-j]) / 2)
		}
		r.pairs = append(r.pairs, pp)
	}
	if l%2 == 0 {
		a := phase(l / 2)
		r.mid = make([]float32, half)
		for j := range r.mid {
			r.mid[j] = float32(a[j]) // a is symmetric: a[j] == a[2K-1-j]
		}
	}
	r.taps = 2 * half
	r.buf = make([]float32, 2*half-1, 2*half-1+r.frame())
	r.rev = make([]float32, 0, cap(r.buf))
	r.delay = time.Duration(half) * time.Second / time.Duration(r.inRate)
}

// designDown builds the folded decimation filter: output o is
// h0*x[oM+c] + sum over d = 1..c of h[d]*(x[oM+c-d] + x[oM+c+d]).
func (r *Resampler) designDown() {
	beta, fc, c := r.kaiser()
	m := r.m
	c = (c+m-1)/m*m - 1 // the last tap before a zero one
	h := prototype(beta, fc, c)
	sum := h[0]
	for _, v := range h[1:] {
		sum += 2 * v
	}
	r.h0 = float32(h[0] / sum)
	r.taps = 1
	for rho := 1; rho < m; rho++ {
		var g []float32
		for d := rho; d <= c; d += m {
			g = append(g, float32(h[d]/sum))
		}
		r.g = append(r.g, g)
		r.taps += 2 * len(g)
	}
	r.half = c
	r.buf = make([]float32, 2*c, 2*c+r.frame())
	r.rev = make([]float32, 0, cap(r.buf))
	r.delay = time.Duration(c) * time.Second / time.Duration(r.inRate)
}

// designGeneral builds the plain polyphase filter for l/m conversions.
func (r *Resampler) designGeneral() {
	beta, fc, c := r.kaiser()
	h := prototype(beta, fc, c)
	k := (2*c + 1 + r.l - 1) / r.l
	k = (k + 3) &^ 3 // multiple of 4 for the unrolled dot product
	// Tap i of the causal filter (length k*l) is h[i-c].
	sum := 0.0
	for i := 0; i < k*r.l; i++ {
		sum += at(h, i-c)
	}
	gain := float64(r.l) / sum // unity gain at DC after zero-stuffing
	r.k = k
	r.coef = make([]float32, r.l*k)
	for p := 0; p < r.l; p++ {
		for j := 0; j < k; j++ {
			r.coef[p*k+j] = float32(at(h, (k-1-j)*r.l+p-c) * gain)
		}
	}
	r.taps = k
	r.buf = make([]float32, k-1, k-1+r.frame())
	r.delay = time.Duration(float64(c) / float64(r.inRate*r.l) * float64(time.Second))
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

// Taps returns the number of nonzero filter taps that contribute to one
// output sample (the longest phase).
func (r *Resampler) Taps() int { return r.taps }

// Reset clears the filter history, as at the start of a new stream.
func (r *Resampler) Reset() {
	switch {
	case r.l == 1 && r.m == 1:
		return
	case r.m == 1:
		r.buf = r.buf[:2*r.half-1]
	case r.l == 1:
		r.buf = r.buf[:2*r.half]
	default:
		r.buf = r.buf[:r.k-1]
	}
	clear(r.buf)
	r.t = 0
}

// Process appends the resampled form of src to dst and returns the extended
// slice. Output for a frame of n input samples is n*out/in samples when n is
// a multiple of in/gcd; otherwise the fractional position carries over to
// the next call. It does not allocate once dst and the internal buffer have
// capacity for a frame.
func (r *Resampler) Process(dst, src []int16) []int16 {
	switch {
	case r.l == 1 && r.m == 1:
		return append(dst, src...)
	case r.m == 1:
		return r.up(dst, src)
	case r.l == 1:
		return r.down(dst, src)
	}
	return r.general(dst, src)
}

// load appends src to the history as float32 and, if rev is wanted,
// rebuilds r.rev as buf reversed.
func (r *Resampler) load(src []int16, rev bool) {
	base := len(r.buf)
	r.buf = grow(r.buf, len(src))
	in := r.buf[base:]
	in = in[:len(src)]
	for i, s := range src {
		in[i] = float32(s)
	}
	if !rev {
		return
	}
	r.rev = grow(r.rev[:0], len(r.buf))
	rv := r.rev[:len(r.buf)]
	n := len(rv) - 1
	for i, v := range r.buf {
		rv[n-i] = v
	}
}

// up interpolates by l. Input i (of this call) has the window
// buf[i:i+2K]: forwards it is lo, and its top half reversed is hi.
func (r *Resampler) up(dst, src []int16) []int16 {
	r.load(src, true)
	l, half := r.l, r.half
	base := len(dst)
	dst = grow(dst, l*len(src))
	out := dst[base:]
	nb := len(r.buf)
	if l == 3 && r.mid == nil && len(r.pairs) == 1 {
		r.up3(out, len(src))
	} else {
		for i := 0; i < len(src); i++ {
			lo := r.buf[i : i+half]
			hi := r.rev[nb-2*half-i : nb-half-i]
			o := out[l*i : l*i+l]
			o[0] = int16(lo[half-1]) // exact: the input sample itself
			for p, pp := range r.pairs {
				s, d := foldPair(lo, hi, pp.sum, pp.diff)
				o[1+p] = clamp16(s + d)
				o[l-1-p] = clamp16(s - d)
			}
			if r.mid != nil {
				o[l/2] = clamp16(fold(lo, hi, r.mid))
			}
		}
	}
	n := copy(r.buf, r.buf[len(src):])
	r.buf = r.buf[:n]
	return dst
}

// up3 is up for l = 3 with the one phase pair folded in line, two inputs
// at a time: each coefficient is loaded once for both and the four sums
// are independent.
func (r *Resampler) up3(out []int16, n int) {
	half := r.half
	nb := len(r.buf)
	sum := r.pairs[0].sum[:half]
	diff := r.pairs[0].diff[:half]
	out = out[:3*n]
	i := 0
	for ; i+1 < n; i += 2 {
		lo0 := r.buf[i : i+half]
		lo1 := r.buf[i+1 : i+1+half]
		hi0 := r.rev[nb-2*half-i : nb-half-i]
		hi1 := r.rev[nb-2*half-i-1 : nb-half-i-1]
		lo0, lo1, hi0, hi1 = lo0[:len(sum)], lo1[:len(sum)], hi0[:len(sum)], hi1[:len(sum)]
		diff := diff[:len(sum)]
		var s0, d0, s1, d1 float32
		for j, c := range sum {
			a0, b0, a1, b1 := lo0[j], hi0[j], lo1[j], hi1[j]
			e := diff[j]
			s0 += c * (a0 + b0)
			d0 += e * (a0 - b0)
			s1 += c * (a1 + b1)
			d1 += e * (a1 - b1)
		}
		o := out[3*i : 3*i+6 : 3*i+6]
		o[0] = int16(lo0[half-1])
		o[1] = clamp16(s0 + d0)
		o[2] = clamp16(s0 - d0)
		o[3] = int16(lo1[half-1])
		o[4] = clamp16(s1 + d1)
		o[5] = clamp16(s1 - d1)
	}
	if i < n {
		lo := r.buf[i : i+half]
		s, d := foldPair(lo, r.rev[nb-2*half-i:nb-half-i], sum, diff)
		o := out[3*i : 3*i+3 : 3*i+3]
		o[0] = int16(lo[half-1])
		o[1] = clamp16(s + d)
		o[2] = clamp16(s - d)
	}
}

// foldPair returns S and D of a phase pair over the window lo, hi.
func foldPair(lo, hi, sum, diff []float32) (s, d float32) {
	hi = hi[:len(lo)]
	sum = sum[:len(lo)]
	diff = diff[:len(lo)]
	for j, a := range lo {
		b := hi[j]
		s += sum[j] * (a + b)
		d += diff[j] * (a - b)
	}
	return s, d
}

// fold returns sum c[j]*(lo[j]+hi[j]): a symmetric filter, folded.
func fold(lo, hi, c []float32) float32 {
	hi = hi[:len(lo)]
	c = c[:len(lo)]
	var s0, s1 float32
	j := 0
	for ; j+1 < len(lo); j += 2 {
		s0 += c[j] * (lo[j] + hi[j])
		s1 += c[j+1] * (lo[j+1] + hi[j+1])
	}
	if j < len(lo) {
		s0 += c[j] * (lo[j] + hi[j])
	}
	return s0 + s1
}

// down decimates by m, computing only the kept outputs. Output o is
// h0*x[C] + sum over the nonzero taps d = m*j+rho of h[d]*(x[C-d]+x[C+d]),
// C = o*m+c. For fixed rho, x[C+d] over j is every m-th sample of buf
// going forwards and x[C-d] every m-th going backwards, so buf and its
// reverse are split into m streams each and every term is a contiguous,
// forward, bounds-check-free loop.
func (r *Resampler) down(dst, src []int16) []int16 {
	r.load(src, false)
	m, c := r.m, r.half
	nb := len(r.buf)
	outN := 0
	if nb > 2*c {
		outN = (nb-2*c-1)/m + 1
	}
	base := len(dst)
	dst = grow(dst, outN)
	out := dst[base : base+outN]
	// Stream q of buf is split[q*sl:], of rev split[(m+q)*sl:].
	sl := (nb + m - 1) / m
	r.split = grow(r.split[:0], 2*m*sl)
	for q := 0; q < m; q++ {
		// buf[i], i = q+m*t, is rev[nb-1-i]: reversed stream q2, position p-t.
		q2, p := (nb-1-q)%m, (nb-1-q)/m
		fw, bw := r.split[q*sl:(q+1)*sl], r.split[(m+q2)*sl:(m+q2+1)*sl]
		bw = bw[:p+1]
		for t, i := 0, q; i < nb; t, i = t+1, i+m {
			v := r.buf[i]
			fw[t] = v
			bw[p-t] = v
		}
	}
	// stream returns the samples x[i], x[i+m], ... of buf (rev = false)
	// or of rev (rev = true), as of output 0: output o reads the
	// forward ones from o on and the reversed ones from -o on.
	stream := func(i int, rev bool) (x []float32, at int) {
		q := i % m
		if rev {
			q += m
		}
		return r.split[q*sl : (q+1)*sl], i / m
	}
	if m == 3 {
		g1, g2 := r.g[0], r.g[1]
		// j = 0 terms of output 0: x[C+rho] = buf[c+rho], x[C-rho] = rev[nb-1-c+rho].
		r1, a1 := stream(c+1, false)
		r2, a2 := stream(c+2, false)
		l1, b1 := stream(nb-c, true)
		l2, b2 := stream(nb+1-c, true)
		for o := range out {
			s := fold2(l1[b1-o:], r1[a1+o:], g1, l2[b2-o:], r2[a2+o:], g2)
			out[o] = clamp16(r.h0*r.buf[o*m+c] + s)
		}
	} else {
		var rs, ls [5][]float32 // m <= 6: rho = 1..5
		var lb [5]int
		for rho := range r.g {
			rx, a := stream(c+rho+1, false)
			lx, b := stream(nb-c+rho, true)
			rs[rho], ls[rho], lb[rho] = rx[a:], lx, b
		}
		for o := range out {
			s := r.h0 * r.buf[o*m+c]
			for rho, g := range r.g {
				s += fold(ls[rho][lb[rho]-o:][:len(g)], rs[rho][o:], g)
			}
			out[o] = clamp16(s)
		}
	}
	n := copy(r.buf, r.buf[outN*m:])
	r.buf = r.buf[:n]
	return dst
}

// fold2 is fold over two folded filters at once (more independent sums
// in flight). It is not inlined: in its own frame the loop keeps every
// slice and the index in registers (inlined into down, the index spilled
// to the stack on every iteration).
//
//go:noinline
func fold2(l1, r1, g1, l2, r2, g2 []float32) float32 {
	l1, r1 = l1[:len(g1)], r1[:len(g1)]
	g2 = g2[:len(g1)]
	l2, r2 = l2[:len(g1)], r2[:len(g1)]
	var s1, s2 float32
	for j, c := range g1 {
		s1 += c * (l1[j] + r1[j])
		s2 += g2[j] * (l2[j] + r2[j])
	}
	return s1 + s2
}

// general is the plain polyphase path for l/m conversions.
func (r *Resampler) general(dst, src []int16) []int16 {
	hist := r.k - 1
	r.load(src, false)
	end := len(src) * r.l
	outN := 0
	if r.t < end {
		outN = (end - r.t + r.m - 1) / r.m
	}
	base := len(dst)
	dst = grow(dst, outN)
	out := dst[base:]
	i, p := r.t/r.l, r.t%r.l
	for o := range out {
		out[o] = clamp16(dot(r.coef[p*r.k:(p+1)*r.k], r.buf[i:i+r.k]))
		p += r.m
		for p >= r.l {
			p -= r.l
			i++
		}
	}
	r.t += outN*r.m - end
	copy(r.buf, r.buf[len(src):len(src)+hist])
	r.buf = r.buf[:hist]
	return dst
}

// dot is an unrolled float32 dot product; len(c) is a multiple of 4.
func dot(c, x []float32) float32 {
	x = x[:len(c)]
	var s0, s1, s2, s3 float32
	for i := 0; i+4 <= len(c); i += 4 {
		cc := c[i : i+4 : i+4]
		xx := x[i : i+4 : i+4]
		s0 += cc[0] * xx[0]
		s1 += cc[1] * xx[1]
		s2 += cc[2] * xx[2]
		s3 += cc[3] * xx[3]
	}
	return (s0 + s1) + (s2 + s3)
}

// clamp16 rounds to the nearest int16 (halves up), saturating, without
// branches: the offset makes the value positive so truncation is floor.
func clamp16(v float32) int16 {
	i := int32(v + 32768.5)
	return int16(min(max(i, 0), 65535) - 32768)
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
