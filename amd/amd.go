package amd

import (
	"math"
	"time"
)

// Event is what a frame of audio made the Detector decide.
type Event int

// Events of Frame, in the order a call meets them: one of Human, Machine
// or Unknown (the classification); after Machine, one of Beep, Silence or
// Timeout (the greeting is over: a message can be left).
const (
	// None: nothing new.
	None Event = iota
	// Human: a short greeting followed by silence.
	Human
	// Machine: a greeting longer than a person's, or a beep.
	Machine
	// Unknown: no speech at all within the initial silence, or no
	// decision within the analysis time.
	Unknown
	// Beep: the machine's beep ended; the recording has started.
	Beep
	// Silence: the machine's greeting ended and no beep followed.
	Silence
	// Timeout: the machine's greeting did not end within MaxWait.
	Timeout
)

var eventNames = [...]string{"none", "human", "machine", "unknown", "beep", "silence", "timeout"}

// String names e.
func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return "event(?)"
}

// Reasons of a classification (Detector.Reason).
const (
	ReasonShortGreeting  = "short_greeting"
	ReasonLongGreeting   = "long_greeting"
	ReasonBeep           = "beep"
	ReasonInitialSilence = "initial_silence"
	ReasonAnalysisTime   = "analysis_timeout"
)

// Options tune a Detector; the zero value of each field takes its
// default.
type Options struct {
	// Rate is the sample rate of the PCM given to Frame: 8000 (default)
	// or 16000.
	Rate int
	// SpeechLevel is the block level, in dBFS, from which a block counts
	// as sound (default -40).
	SpeechLevel float64
	// MinSpeech is the sound that starts a greeting (default 60 ms), so
	// that a click is not a word.
	MinSpeech time.Duration
	// InitialSilence without a word after the answer makes the call
	// Unknown (default 2.5 s): a person who picked up and waits, or a
	// silent machine.
	InitialSilence time.Duration
	// AfterGreeting is the silence that ends a greeting (default 800 ms).
	AfterGreeting time.Duration
	// MaxGreeting is the longest greeting a person says (default 2 s):
	// one that goes on past it is a machine's.
	MaxGreeting time.Duration
	// MaxAnalysis bounds the classification (default 6 s): Unknown then.
	MaxAnalysis time.Duration
	// EndSilence is the silence after a machine's greeting that means no
	// beep will come (default 2.5 s).
	EndSilence time.Duration
	// MaxWait bounds the wait for the end of a machine's greeting, from
	// the answer (default 30 s).
	MaxWait time.Duration
	// MinBeep is the shortest tone taken as a beep (default 120 ms).
	MinBeep time.Duration
	// Purity is the share of a block's energy one frequency must hold for
	// the block to be a tone (default 0.7).
	Purity float64
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Rate != 16000 {
		o.Rate = 8000
	}
	if o.SpeechLevel == 0 {
		o.SpeechLevel = -40
	}
	def(&o.MinSpeech, 60*time.Millisecond)
	def(&o.InitialSilence, 2500*time.Millisecond)
	def(&o.AfterGreeting, 800*time.Millisecond)
	def(&o.MaxGreeting, 2*time.Second)
	def(&o.MaxAnalysis, 6*time.Second)
	def(&o.EndSilence, 2500*time.Millisecond)
	def(&o.MaxWait, 30*time.Second)
	def(&o.MinBeep, 120*time.Millisecond)
	if o.Purity <= 0 || o.Purity >= 1 {
		o.Purity = 0.7
	}
	return o
}

// Block is the analysis block: 20 ms of audio.
const Block = 20 * time.Millisecond

// maxBlock is the samples of a block at the highest rate (16 kHz).
const maxBlock = 320

// Beep frequencies searched: 300 Hz to 2.5 kHz in steps of half the
// block's 50 Hz bin, so that a tone between two steps still shows 80 % of
// its energy in the nearest one.
const (
	beepLow  = 300.0
	beepHigh = 2500.0
	beepStep = 25.0
)

type phase int

const (
	listening phase = iota // before any word
	greeting               // a greeting is being said
	machine                // classified machine: waiting for its end
	done                   // nothing more to say
)

// Detector classifies one call's callee. Frame is called with each frame
// of audio in order, on one goroutine; it never allocates.
type Detector struct {
	opts Options
	n    int // samples a block
	blk  [maxBlock]int16
	fill int

	// Goertzel coefficients (2·cos ω) of the beep bank.
	coef []float64
	// energy of a block at SpeechLevel, and the purity threshold.
	minEnergy float64

	phase  phase
	blocks int // blocks so far (time = blocks · 20 ms)

	voiced, silent int // current run of sound / silence blocks
	speechStart    int // block where the greeting's first word started
	lastVoiced     int // last block with sound
	toneRun        int // current run of tone blocks at one frequency
	toneBin        int
	beepSeen       bool // a tone as long as a beep is in progress

	reason   string
	greetLen int // blocks of greeting when it was classified
}

// New returns a detector for audio at opts.Rate.
func New(opts Options) *Detector {
	opts = opts.withDefaults()
	d := &Detector{opts: opts, n: opts.Rate / 50, speechStart: -1, lastVoiced: -1, toneBin: -1}
	for f := beepLow; f <= beepHigh; f += beepStep {
		d.coef = append(d.coef, 2*math.Cos(2*math.Pi*f/float64(opts.Rate)))
	}
	full := float64(d.n) * 32768 * 32768
	d.minEnergy = full * math.Pow(10, opts.SpeechLevel/10)
	return d
}

// Reason says why the detector classified the call as it did ("" before
// it did): short_greeting, long_greeting, beep, initial_silence,
// analysis_timeout.
func (d *Detector) Reason() string { return d.reason }

// Greeting is the length of the greeting heard when the call was
// classified (0 when none was).
func (d *Detector) Greeting() time.Duration { return time.Duration(d.greetLen) * Block }

// Elapsed is the audio analysed so far.
func (d *Detector) Elapsed() time.Duration { return time.Duration(d.blocks) * Block }

// Frame analyses one frame of PCM16 at the detector's rate (any length)
// and returns the event it led to, or None. When one frame completes
// several blocks that each decide something, the first decision is
// returned and the later blocks go on being analysed.
func (d *Detector) Frame(pcm []int16) Event {
	ev := None
	for len(pcm) > 0 {
		k := copy(d.blk[d.fill:d.n], pcm)
		d.fill += k
		pcm = pcm[k:]
		if d.fill < d.n {
			break
		}
		d.fill = 0
		if e := d.block(d.blk[:d.n]); ev == None {
			ev = e
		}
	}
	return ev
}

func (d *Detector) blocksOf(t time.Duration) int { return int((t + Block - 1) / Block) }

// block analyses one 20 ms block.
func (d *Detector) block(b []int16) Event {
	if d.phase == done {
		return None
	}
	d.blocks++
	var e float64
	for _, s := range b {
		v := float64(s)
		e += v * v
	}
	sound := e >= d.minEnergy
	tone := sound && d.tone(b, e)
	if sound {
		d.voiced++
		d.silent = 0
		d.lastVoiced = d.blocks
	} else {
		d.silent++
		d.voiced = 0
	}
	switch d.phase {
	case listening:
		switch {
		case d.beepSeen:
			return d.classify(Machine, ReasonBeep)
		case d.voiced >= d.blocksOf(d.opts.MinSpeech):
			d.phase, d.speechStart = greeting, d.blocks-d.voiced+1
		case d.blocks >= d.blocksOf(d.opts.InitialSilence):
			d.phase = done
			return d.classify(Unknown, ReasonInitialSilence)
		}
	case greeting:
		spoken := d.lastVoiced - d.speechStart + 1
		switch {
		case d.beepSeen:
			return d.classify(Machine, ReasonBeep)
		case spoken > d.blocksOf(d.opts.MaxGreeting):
			return d.classify(Machine, ReasonLongGreeting)
		case d.silent >= d.blocksOf(d.opts.AfterGreeting):
			d.phase = done
			return d.classify(Human, ReasonShortGreeting)
		case d.blocks >= d.blocksOf(d.opts.MaxAnalysis):
			d.phase = done
			return d.classify(Unknown, ReasonAnalysisTime)
		}
	case machine:
		switch {
		case d.beepSeen && !tone:
			d.phase = done
			return Beep
		case !d.beepSeen && d.silent >= d.blocksOf(d.opts.EndSilence):
			d.phase = done
			return Silence
		case d.blocks >= d.blocksOf(d.opts.MaxWait):
			d.phase = done
			return Timeout
		}
	}
	return None
}

func (d *Detector) classify(ev Event, reason string) Event {
	d.reason = reason
	if d.speechStart >= 0 {
		d.greetLen = d.lastVoiced - d.speechStart + 1
	}
	if ev == Machine {
		d.phase = machine
	}
	return ev
}

// tone runs the Goertzel bank over a block of energy e and follows the
// run of blocks whose energy one frequency holds; it reports whether this
// block is such a tone. A run of MinBeep or more marks a beep.
func (d *Detector) tone(b []int16, e float64) bool {
	// Every other filter first (50 Hz apart, a bin), then the two between
	// which the best one lies: a tone anywhere in the band is found at
	// its nearest 25 Hz step for 47 filters instead of 89.
	best, bestBin := 0.0, -1
	for i := 0; i < len(d.coef); i += 2 {
		if p := goertzel(b, d.coef[i]); p > best {
			best, bestBin = p, i
		}
	}
	for _, i := range [2]int{bestBin - 1, bestBin + 1} {
		if i < 0 || i >= len(d.coef) {
			continue
		}
		if p := goertzel(b, d.coef[i]); p > best {
			best, bestBin = p, i
		}
	}
	// A sinusoid on a bin has |X|² = (A·N/2)² and energy A²·N/2: the
	// ratio 2|X|²/(N·E) is 1 for a pure tone, far less for speech.
	purity := 2 * best / (float64(len(b)) * e)
	if purity < d.opts.Purity {
		d.toneRun, d.toneBin = 0, -1
		return false
	}
	if d.toneBin >= 0 && abs(bestBin-d.toneBin) <= 2 {
		d.toneRun++
	} else {
		d.toneRun = 1
	}
	d.toneBin = bestBin
	if d.toneRun >= d.blocksOf(d.opts.MinBeep) {
		d.beepSeen = true
	}
	return true
}

// goertzel is the power of block b at the frequency of coefficient c
// (2·cos ω).
func goertzel(b []int16, c float64) float64 {
	var s1, s2 float64
	for _, x := range b {
		s0 := float64(x) + c*s1 - s2
		s2, s1 = s1, s0
	}
	return s1*s1 + s2*s2 - c*s1*s2
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
