package media

import "sync"

// G.722 (ITU-T G.722, 64 kbit/s mode): 16 kHz audio split by a 24-tap
// quadrature mirror filter into a low band coded with 6-bit ADPCM and a
// high band coded with 2-bit ADPCM, one byte per pair of input samples.
// RFC 3551 section 4.5.2: its RTP clock rate is 8000 (an error in RFC 1890
// kept for compatibility), so a byte is one RTP timestamp tick and a 20 ms
// frame is 160 bytes and 160 ticks, like G.711, for 320 samples at 16 kHz.
//
// The encoder and decoder are stateful (adaptive predictors and scale
// factors): one per direction of a call, fed every frame in order.
// TestG722MatchesReference checks them byte for byte against output of
// the reference implementation shipped by Debian (spandsp).

// G722Rate is G.722's audio sampling rate.
const G722Rate = 16000

// g722Silence is the code a fresh encoder settles on for silence: what
// fills a G.722 frame with nothing to send.
var g722Silence = sync.OnceValue(func() byte {
	code := NewG722Encoder().Encode(nil, make([]int16, 2*G722Rate/10))
	return code[len(code)-1]
})

// The constants of ITU-T G.722.
var (
	g722QMF = [12]int32{3, -11, 12, 32, -210, 951, 3876, -805, 362, -156, 53, -11}
	// 6-bit low-band quantizer decision levels and their codes.
	g722Q6  = [32]int32{0, 35, 72, 110, 150, 190, 233, 276, 323, 370, 422, 473, 530, 587, 650, 714, 786, 858, 940, 1023, 1121, 1219, 1339, 1458, 1612, 1765, 1980, 2195, 2557, 2919, 0, 0}
	g722ILN = [32]int32{0, 63, 62, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 0}
	g722ILP = [32]int32{0, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 0}
	// Scale factor adaptation of the low band.
	g722WL   = [8]int32{-60, -30, 58, 172, 334, 538, 1198, 3042}
	g722RL42 = [16]int32{0, 7, 6, 5, 4, 3, 2, 1, 7, 6, 5, 4, 3, 2, 1, 0}
	// Inverse logarithm table of the scale factor.
	g722ILB = [32]int32{2048, 2093, 2139, 2186, 2233, 2282, 2332, 2383, 2435, 2489, 2543, 2599, 2656, 2714, 2774, 2834,
		2896, 2960, 3025, 3091, 3158, 3228, 3298, 3371, 3444, 3520, 3597, 3676, 3756, 3838, 3922, 4008}
	// Inverse quantizers: 4-bit (predictor update), 6-bit (low-band
	// output) and 2-bit (high band).
	g722QM4 = [16]int32{0, -20456, -12896, -8968, -6288, -4240, -2584, -1200, 20456, 12896, 8968, 6288, 4240, 2584, 1200, 0}
	g722QM6 = [64]int32{-136, -136, -136, -136, -24808, -21904, -19008, -16704, -14984, -13512, -12280, -11192, -10232, -9360, -8576, -7856,
		-7192, -6576, -6000, -5456, -4944, -4464, -4008, -3576, -3168, -2776, -2400, -2032, -1688, -1360, -1040, -728,
		24808, 21904, 19008, 16704, 14984, 13512, 12280, 11192, 10232, 9360, 8576, 7856, 7192, 6576, 6000, 5456,
		4944, 4464, 4008, 3576, 3168, 2776, 2400, 2032, 1688, 1360, 1040, 728, 432, 136, -432, -136}
	g722QM2 = [4]int32{-7408, -1616, 7408, 1616}
	// High band quantizer codes and scale factor adaptation.
	g722IHN = [3]int32{0, 1, 0}
	g722IHP = [3]int32{0, 3, 2}
	g722WH  = [3]int32{0, -214, 798}
	g722RH2 = [4]int32{2, 1, 2, 1}
)

func sat16(v int32) int32 {
	return min(max(v, -32768), 32767)
}

// g722Band is the adaptive state of one sub-band.
type g722Band struct {
	s, sp, sz int32    // signal estimate, its pole and zero parts
	r         [3]int32 // reconstructed signal
	a, ap     [3]int32 // pole predictor coefficients (1, 2) and their update
	p         [3]int32 // partially reconstructed signal
	d         [7]int32 // quantized differences
	b, bp     [7]int32 // zero predictor coefficients (1..6) and their update
	sg        [7]int32 // signs
	nb        int32    // logarithmic scale factor
	det       int32    // scale factor
}

// update runs the predictor adaptation (ITU-T G.722 block 4) with the
// quantized difference d.
func (b *g722Band) update(d int32) {
	b.d[0] = d
	b.r[0] = sat16(b.s + d)
	b.p[0] = sat16(b.sz + d)
	// Second pole coefficient.
	for i := 0; i < 3; i++ {
		b.sg[i] = b.p[i] >> 15
	}
	wd1 := sat16(b.a[1] << 2)
	wd2 := wd1
	if b.sg[0] == b.sg[1] {
		wd2 = -wd1
	}
	wd2 = min(wd2, 32767)
	wd3 := int32(-128)
	if b.sg[0] == b.sg[2] {
		wd3 = 128
	}
	wd3 += wd2 >> 7
	wd3 += (b.a[2] * 32512) >> 15
	b.ap[2] = min(max(wd3, -12288), 12288)
	// First pole coefficient.
	b.sg[0], b.sg[1] = b.p[0]>>15, b.p[1]>>15
	wd1 = -192
	if b.sg[0] == b.sg[1] {
		wd1 = 192
	}
	wd2 = (b.a[1] * 32640) >> 15
	b.ap[1] = sat16(wd1 + wd2)
	wd3 = sat16(15360 - b.ap[2])
	b.ap[1] = min(max(b.ap[1], -wd3), wd3)
	// Zero coefficients.
	wd1 = 128
	if d == 0 {
		wd1 = 0
	}
	b.sg[0] = d >> 15
	for i := 1; i < 7; i++ {
		b.sg[i] = b.d[i] >> 15
		wd2 = -wd1
		if b.sg[i] == b.sg[0] {
			wd2 = wd1
		}
		wd3 = (b.b[i] * 32640) >> 15
		b.bp[i] = sat16(wd2 + wd3)
	}
	// Delays.
	for i := 6; i > 0; i-- {
		b.d[i] = b.d[i-1]
		b.b[i] = b.bp[i]
	}
	for i := 2; i > 0; i-- {
		b.r[i] = b.r[i-1]
		b.p[i] = b.p[i-1]
		b.a[i] = b.ap[i]
	}
	// Pole and zero predictor outputs, signal estimate.
	wd1 = (b.a[1] * sat16(b.r[1]+b.r[1])) >> 15
	wd2 = (b.a[2] * sat16(b.r[2]+b.r[2])) >> 15
	b.sp = sat16(wd1 + wd2)
	b.sz = 0
	for i := 6; i > 0; i-- {
		b.sz += (b.b[i] * sat16(b.d[i]+b.d[i])) >> 15
	}
	b.sz = sat16(b.sz)
	b.s = sat16(b.sp + b.sz)
}

// scale adapts the scale factor from nb (low band: shift 8, high band: 10).
func (b *g722Band) scale(nb, limit, shift int32) {
	b.nb = min(max(nb, 0), limit)
	wd1 := (b.nb >> 6) & 31
	wd2 := shift - (b.nb >> 11)
	var wd3 int32
	if wd2 < 0 {
		wd3 = g722ILB[wd1] << -wd2
	} else {
		wd3 = g722ILB[wd1] >> wd2
	}
	b.det = wd3 << 2
}

// lowAdapt updates the low band from its 4-bit code ril.
func (b *g722Band) lowAdapt(ril int32) {
	dlow := (b.det * g722QM4[ril]) >> 15
	b.scale(((b.nb*127)>>7)+g722WL[g722RL42[ril]], 18432, 8)
	b.update(dlow)
}

// highAdapt updates the high band from its 2-bit code.
func (b *g722Band) highAdapt(ihigh int32) {
	dhigh := (b.det * g722QM2[ihigh]) >> 15
	b.scale(((b.nb*127)>>7)+g722WH[g722RH2[ihigh]], 22528, 10)
	b.update(dhigh)
}

// G722Encoder encodes 16 kHz PCM to G.722 (64 kbit/s). It is not safe
// for concurrent use.
type G722Encoder struct {
	x    [24]int32 // QMF history
	band [2]g722Band
}

// NewG722Encoder returns an encoder in the initial state.
func NewG722Encoder() *G722Encoder {
	e := &G722Encoder{}
	e.band[0].det, e.band[1].det = 32, 8
	return e
}

// Encode appends the code of pcm (an even number of 16 kHz samples; a
// last odd sample is dropped) to dst, one byte per two samples.
func (e *G722Encoder) Encode(dst []byte, pcm []int16) []byte {
	for j := 0; j+1 < len(pcm); j += 2 {
		// Transmit QMF.
		copy(e.x[:22], e.x[2:])
		e.x[22], e.x[23] = int32(pcm[j]), int32(pcm[j+1])
		var sumEven, sumOdd int32
		for i := 0; i < 12; i++ {
			sumOdd += e.x[2*i] * g722QMF[i]
			sumEven += e.x[2*i+1] * g722QMF[11-i]
		}
		xlow := (sumEven + sumOdd) >> 14
		xhigh := (sumEven - sumOdd) >> 14

		// Low band: quantize the prediction error (block 1L).
		lo := &e.band[0]
		el := sat16(xlow - lo.s)
		wd := el
		if el < 0 {
			wd = -(el + 1)
		}
		i := 1
		for ; i < 30; i++ {
			if wd < (g722Q6[i]*lo.det)>>12 {
				break
			}
		}
		ilow := g722ILP[i]
		if el < 0 {
			ilow = g722ILN[i]
		}
		lo.lowAdapt(ilow >> 2)

		// High band (block 1H).
		hi := &e.band[1]
		eh := sat16(xhigh - hi.s)
		wd = eh
		if eh < 0 {
			wd = -(eh + 1)
		}
		mih := 1
		if wd >= (564*hi.det)>>12 {
			mih = 2
		}
		ihigh := g722IHP[mih]
		if eh < 0 {
			ihigh = g722IHN[mih]
		}
		hi.highAdapt(ihigh)

		dst = append(dst, byte(ihigh<<6|ilow))
	}
	return dst
}

// G722Decoder decodes G.722 (64 kbit/s) to 16 kHz PCM. It is not safe for
// concurrent use.
type G722Decoder struct {
	x    [24]int32 // QMF history
	band [2]g722Band
}

// NewG722Decoder returns a decoder in the initial state.
func NewG722Decoder() *G722Decoder {
	d := &G722Decoder{}
	d.band[0].det, d.band[1].det = 32, 8
	return d
}

// Decode appends the 16 kHz PCM of code (two samples per byte) to dst.
func (d *G722Decoder) Decode(dst []int16, code []byte) []int16 {
	for _, c := range code {
		ilow, ihigh := int32(c&0x3F), int32(c>>6)

		// Low band: the 6-bit inverse quantizer gives the output; the
		// predictor adapts on the 4-bit one (blocks 5L, 2L, 3L, 4L).
		lo := &d.band[0]
		rlow := min(max(lo.s+(lo.det*g722QM6[ilow])>>15, -16384), 16383)
		lo.lowAdapt(ilow >> 2)

		// High band (blocks 2H, 3H, 4H).
		hi := &d.band[1]
		rhigh := min(max(hi.s+(hi.det*g722QM2[ihigh])>>15, -16384), 16383)
		hi.highAdapt(ihigh)

		// Receive QMF.
		copy(d.x[:22], d.x[2:])
		d.x[22], d.x[23] = rlow+rhigh, rlow-rhigh
		var out1, out2 int32
		for i := 0; i < 12; i++ {
			out2 += d.x[2*i] * g722QMF[i]
			out1 += d.x[2*i+1] * g722QMF[11-i]
		}
		dst = append(dst, int16(sat16(out1>>11)), int16(sat16(out2>>11)))
	}
	return dst
}
