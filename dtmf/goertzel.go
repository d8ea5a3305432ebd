package dtmf

import (
	"math"
	"time"
)

// DetectorOptions configures a Detector. The zero value is usable; every
// default follows ITU-T Q.24 as commonly applied.
type DetectorOptions struct {
	// MinLevel is the weakest tone accepted, per tone, in dBFS (0 dBFS = a
	// full-scale sine). Default -38 dBFS (about -35 dBm0 in G.711).
	MinLevel float64
	// NormalTwist is how much weaker (dB) the high-group tone may be than
	// the low-group tone. Default 8 dB.
	NormalTwist float64
	// ReverseTwist is how much stronger (dB) the high-group tone may be than
	// the low-group tone. Default 4 dB.
	ReverseTwist float64
	// FreqTolerance is the largest accepted frequency deviation, as a
	// fraction of the nominal frequency. Q.24 asks to accept 1.5% and reject
	// 3.5%; default 0.025 sits between.
	FreqTolerance float64
	// MinPurity is the smallest share of the signal's energy the two tones
	// must carry; speech and music spread theirs over many harmonics. This
	// is the main guard against talk-off. Default 0.85.
	MinPurity float64
	// MinDuration is the shortest tone accepted. Default 40 ms.
	MinDuration time.Duration
	// MinPause is the shortest gap that separates two key presses; a
	// shorter drop-out inside a tone is bridged. Default 40 ms.
	MinPause time.Duration
}

// Defaults of DetectorOptions.
const (
	DefaultMinLevel      = -38.0
	DefaultNormalTwist   = 8.0
	DefaultReverseTwist  = 4.0
	DefaultFreqTolerance = 0.025
	DefaultMinPurity     = 0.85
	DefaultMinDuration   = 40 * time.Millisecond
	DefaultMinPause      = 40 * time.Millisecond
)

// DetectorSampleRate is the sample rate a Detector expects.
const DetectorSampleRate = 8000

const (
	// blockSize is the Goertzel block: 102 samples, 12.75 ms, so that a
	// 40 ms tone always covers two whole blocks, with a 78 Hz bin width
	// that still separates adjacent DTMF frequencies (73 Hz apart at least,
	// but the frequency check below does the fine work).
	blockSize = 102
	halfBlock = blockSize / 2
	// relPeak: the strongest row (column) must beat every other row
	// (column) by this power ratio (6 dB).
	relPeak = 3.98
	// halfBalance: the two halves of a hit block must carry the tone at
	// powers within 6 dB of each other.
	halfBalance = 0.25
	// maxCorrection is the largest frequency offset (relative) for which
	// a tone's power is corrected.
	maxCorrection = 0.015
	// fullScalePower is the mean power of a full-scale int16 sine.
	fullScalePower = 32767.0 * 32767.0 / 2
)

// Detector finds DTMF dual tones in 8 kHz int16 audio (the decoded caller
// audio), for carriers that send keys as sound. It is not safe for
// concurrent use and does not allocate.
//
// The audio is cut into 102-sample blocks regardless of how it is framed. In
// each block a Goertzel filter per DTMF frequency gives the power of that
// frequency and, comparing the phase of the block's two halves, the tone's
// actual frequency. A block is a hit for a key when:
//
//   - the strongest row and column tones each reach MinLevel;
//   - each beats the other tones of its group by 6 dB;
//   - both frequencies are within FreqTolerance of nominal;
//   - the twist is within NormalTwist / ReverseTwist;
//   - the two tones carry at least MinPurity of the block's energy (after
//     correcting their power for the measured frequency offset). Speech and
//     music put much of their energy in harmonics and other partials, so
//     this check subsumes a second-harmonic test and is what resists
//     talk-off.
//
// A key is reported once enough consecutive hit blocks cover MinDuration
// (two blocks, 25.5 ms of tone fully inside blocks, for the 40 ms default);
// it ends after one more consecutive non-hit blocks than MinPause covers
// whole (three for 40 ms), so a drop-out that spoils at most two blocks
// (anything up to one block, 12.75 ms, such as Q.24's 10 ms interruption)
// is bridged, while a 40 ms pause always spoils three (two whole blocks, plus
// a partial one with a silent half, which fails the half-balance check).
// A block is also a miss when the tone's power differs by more than 6 dB
// between its two halves (a tone starting or stopping inside it). With these
// rules tones of 20 ms are rejected and tones from about 25 ms accepted.
// Event.At is the start of the first hit block.
type Detector struct {
	opts        DetectorOptions
	minPower    float64 // per tone, in int16 units squared
	minEnergy   float64 // per sample, for the quick reject
	normalTwist float64 // power ratios
	reverseTwst float64
	hitsNeeded  int
	missNeeded  int

	coef [8]float64 // 2 cos(w)
	cosw [8]float64
	sinw [8]float64
	// rotHalf and rotFull turn the Goertzel output after 51 and 102 samples
	// into the DFT sum referenced to the block start: e^{-jw(m-1)}.
	rotHalfRe, rotHalfIm [8]float64
	rotFullRe, rotFullIm [8]float64
	freqs                [8]float64

	// Block state.
	s1, s2         [8]float64
	x1Re, x1Im     [8]float64
	energy         float64
	pos            int
	buf            [halfBlock]float64
	samples        int64 // samples processed since Reset
	blockStartSamp int64

	// Key state.
	cur       byte // key being heard, 0 if none
	misses    int
	cand      byte
	candCount int
	candStart int64 // sample index of the first hit block of cand
}

// NewDetector returns a Detector for 8 kHz audio.
func NewDetector(opts DetectorOptions) *Detector {
	if opts.MinLevel == 0 {
		opts.MinLevel = DefaultMinLevel
	}
	if opts.NormalTwist <= 0 {
		opts.NormalTwist = DefaultNormalTwist
	}
	if opts.ReverseTwist <= 0 {
		opts.ReverseTwist = DefaultReverseTwist
	}
	if opts.FreqTolerance <= 0 {
		opts.FreqTolerance = DefaultFreqTolerance
	}
	if opts.MinPurity <= 0 {
		opts.MinPurity = DefaultMinPurity
	}
	if opts.MinDuration <= 0 {
		opts.MinDuration = DefaultMinDuration
	}
	if opts.MinPause <= 0 {
		opts.MinPause = DefaultMinPause
	}
	d := &Detector{
		opts:        opts,
		minPower:    fullScalePower * math.Pow(10, opts.MinLevel/10),
		normalTwist: math.Pow(10, opts.NormalTwist/10),
		reverseTwst: math.Pow(10, opts.ReverseTwist/10),
		hitsNeeded:  blocksFor(opts.MinDuration),
		missNeeded:  blocksFor(opts.MinPause) + 1,
	}
	// Two tones at MinLevel carry at least 2*minPower.
	d.minEnergy = 2 * d.minPower
	for i := range 8 {
		f := lowFreqs[i%4]
		if i >= 4 {
			f = highFreqs[i-4]
		}
		w := 2 * math.Pi * f / DetectorSampleRate
		d.freqs[i] = f
		d.coef[i] = 2 * math.Cos(w)
		d.cosw[i], d.sinw[i] = math.Cos(w), math.Sin(w)
		d.rotHalfRe[i], d.rotHalfIm[i] = math.Cos(w*(halfBlock-1)), -math.Sin(w*(halfBlock-1))
		d.rotFullRe[i], d.rotFullIm[i] = math.Cos(w*(blockSize-1)), -math.Sin(w*(blockSize-1))
	}
	return d
}

// blocksFor returns how many consecutive blocks a signal of duration dur
// covers whole in the worst alignment (at least 1, at least 2 for anything
// longer than a block).
func blocksFor(dur time.Duration) int {
	samples := int(dur * DetectorSampleRate / time.Second)
	n := (samples - blockSize + 1) / blockSize
	if n < 1 {
		n = 1
	}
	return n
}

// Reset forgets all audio, for a new stream.
func (d *Detector) Reset() {
	d.s1, d.s2 = [8]float64{}, [8]float64{}
	d.energy, d.pos, d.samples, d.blockStartSamp = 0, 0, 0, 0
	d.cur, d.misses, d.cand, d.candCount = 0, 0, 0, 0
}

// Active reports whether a key's tone is being heard.
func (d *Detector) Active() bool { return d.cur != 0 }

// Process feeds the next frame of audio, whose first sample was captured at
// now, and appends the key presses that began in it (or in earlier frames
// and were confirmed by it) to dst. Frames may have any length.
func (d *Detector) Process(dst []Event, pcm []int16, now time.Time) []Event {
	callStart := d.samples
	for len(pcm) > 0 {
		end := halfBlock
		if d.pos >= halfBlock {
			end = blockSize
		}
		n := min(end-d.pos, len(pcm))
		d.run(pcm[:n])
		pcm = pcm[n:]
		d.pos += n
		d.samples += int64(n)
		switch d.pos {
		case halfBlock:
			d.snapshotHalf()
		case blockSize:
			if ev, ok := d.endBlock(callStart, now); ok {
				dst = append(dst, ev)
			}
			d.pos = 0
			d.blockStartSamp = d.samples
		}
	}
	return dst
}

// run feeds samples through the eight Goertzel filters.
func (d *Detector) run(pcm []int16) {
	buf := d.buf[:len(pcm)]
	e := d.energy
	for i, x := range pcm {
		v := float64(x)
		buf[i] = v
		e += v * v
	}
	d.energy = e
	// Four filters per pass: their recurrences are independent, so the
	// CPU overlaps them instead of waiting on one chain's multiply-add
	// (same operations in the same order: the sums are bit for bit those
	// of one filter at a time).
	for f := 0; f < 8; f += 4 {
		c0, c1, c2, c3 := d.coef[f], d.coef[f+1], d.coef[f+2], d.coef[f+3]
		a0, a1, a2, a3 := d.s1[f], d.s1[f+1], d.s1[f+2], d.s1[f+3]
		b0, b1, b2, b3 := d.s2[f], d.s2[f+1], d.s2[f+2], d.s2[f+3]
		for _, v := range buf {
			a0, b0 = v+c0*a0-b0, a0
			a1, b1 = v+c1*a1-b1, a1
			a2, b2 = v+c2*a2-b2, a2
			a3, b3 = v+c3*a3-b3, a3
		}
		d.s1[f], d.s1[f+1], d.s1[f+2], d.s1[f+3] = a0, a1, a2, a3
		d.s2[f], d.s2[f+1], d.s2[f+2], d.s2[f+3] = b0, b1, b2, b3
	}
}

// snapshotHalf keeps the DFT sums of the first half block.
func (d *Detector) snapshotHalf() {
	for f := range 8 {
		yr := d.s1[f] - d.cosw[f]*d.s2[f]
		yi := d.sinw[f] * d.s2[f]
		d.x1Re[f] = yr*d.rotHalfRe[f] - yi*d.rotHalfIm[f]
		d.x1Im[f] = yr*d.rotHalfIm[f] + yi*d.rotHalfRe[f]
	}
}

// endBlock classifies the finished block and runs the key state machine.
func (d *Detector) endBlock(callStart int64, now time.Time) (Event, bool) {
	hit := d.classify()
	d.s1, d.s2 = [8]float64{}, [8]float64{}
	d.energy = 0

	if hit != 0 && hit != d.cur {
		if hit == d.cand {
			d.candCount++
		} else {
			d.cand, d.candCount, d.candStart = hit, 1, d.blockStartSamp
		}
	} else if hit == 0 {
		d.cand, d.candCount = 0, 0
	}
	if d.cur != 0 {
		if hit == d.cur {
			d.misses = 0
			return Event{}, false
		}
		d.misses++
		if d.misses < d.missNeeded {
			return Event{}, false
		}
		d.cur = 0
	}
	if d.cand == 0 || d.candCount < d.hitsNeeded {
		return Event{}, false
	}
	d.cur, d.misses = d.cand, 0
	d.cand, d.candCount = 0, 0
	at := now.Add(time.Duration(d.candStart-callStart) * time.Second / DetectorSampleRate)
	return Event{
		Digit:    d.cur,
		Source:   SourceInband,
		At:       at,
		Duration: time.Duration(d.samples-d.candStart) * time.Second / DetectorSampleRate,
	}, true
}

// classify returns the key whose tones fill the finished block, or 0.
func (d *Detector) classify() byte {
	meanEnergy := d.energy / blockSize
	if meanEnergy < d.minEnergy {
		return 0
	}
	var xr, xi, pow [8]float64
	const norm = 2.0 / (blockSize * blockSize)
	for f := range 8 {
		yr := d.s1[f] - d.cosw[f]*d.s2[f]
		yi := d.sinw[f] * d.s2[f]
		xr[f] = yr*d.rotFullRe[f] - yi*d.rotFullIm[f]
		xi[f] = yr*d.rotFullIm[f] + yi*d.rotFullRe[f]
		pow[f] = norm * (xr[f]*xr[f] + xi[f]*xi[f])
	}
	row := argmax4(pow[0:4])
	col := 4 + argmax4(pow[4:8])
	pr, pc := pow[row], pow[col]
	if pr < d.minPower || pc < d.minPower {
		return 0
	}
	for f := range 4 {
		if f != row && pow[f]*relPeak > pr {
			return 0
		}
		if f+4 != col && pow[f+4]*relPeak > pc {
			return 0
		}
	}
	ar, ok := d.offsetGain(row, xr[row], xi[row])
	if !ok {
		return 0
	}
	ac, ok := d.offsetGain(col, xr[col], xi[col])
	if !ok {
		return 0
	}
	pr /= ar
	pc /= ac
	if pr > pc*d.normalTwist || pc > pr*d.reverseTwst {
		return 0
	}
	if pr+pc < d.opts.MinPurity*meanEnergy {
		return 0
	}
	return keypad[row][col-4]
}

// offsetGain measures the frequency of filter f's tone from the phase
// advance between the block's halves, rejects it outside FreqTolerance, and
// returns the power gain of the full-block filter at that offset (to correct
// the measured power).
func (d *Detector) offsetGain(f int, xr, xi float64) (float64, bool) {
	// Second half = full - first half.
	ar, ai := d.x1Re[f], d.x1Im[f]
	br, bi := xr-ar, xi-ai
	// b * conj(a)
	pr := br*ar + bi*ai
	pi := bi*ar - br*ai
	// A tone that starts or stops inside the block leaves one half
	// (nearly) empty: no steady tone, and no trustworthy phase.
	pa, pb := ar*ar+ai*ai, br*br+bi*bi
	if pa < halfBalance*pb || pb < halfBalance*pa {
		return 0, false
	}
	dphi := math.Atan2(pi, pr)
	df := dphi * DetectorSampleRate / (2 * math.Pi * halfBlock)
	if math.Abs(df) > d.opts.FreqTolerance*d.freqs[f] {
		return 0, false
	}
	// Offset in bins of the full block; gain is |sinc|^2. The correction
	// stops at the 1.5% that Q.24 requires to accept: a tone further off
	// gets no more credit, which keeps speech formants from being boosted.
	df = math.Min(math.Abs(df), maxCorrection*d.freqs[f])
	x := math.Pi * df * blockSize / DetectorSampleRate
	if x == 0 {
		return 1, true
	}
	g := math.Sin(x) / x
	return g * g, true
}

func argmax4(p []float64) int {
	best := 0
	for i := 1; i < 4; i++ {
		if p[i] > p[best] {
			best = i
		}
	}
	return best
}
