package transfer

import "math"

// musicRate is the rate the hold music is synthesized at: wideband, so a
// G.722 or Opus caller hears it clear; a G.711 caller's copy is
// resampled once (media.Loop).
const musicRate = 16000

// The hold music: four bars of a soft arpeggiated chord progression
// (C, A minor, F, G at 84 beats a minute), eighth notes of a plucked
// electric-piano-like tone over a sustained bass, synthesized at start
// (no recording is shipped, so nothing is copyrighted). Every note's
// tail that runs past the end is folded onto the start, so the loop
// joins without a click.
var (
	musicBPM    = 84.0
	musicChords = [][]int{ // MIDI notes: the bass, then four to arpeggiate
		{36, 60, 64, 67, 72}, // C
		{33, 57, 60, 64, 69}, // A minor
		{29, 57, 60, 65, 69}, // F
		{31, 55, 59, 62, 67}, // G
	}
	musicPattern = []int{0, 1, 2, 3, 2, 1, 2, 1} // eighth notes of a bar
)

// musicPeak is the loudest sample, as a share of full scale (-10 dBFS):
// hold music sits under speech and clear of G.711's loudest codes.
const musicPeak = 0.32

// Music returns the hold music at rate as PCM16 samples (about 11.4 s).
func Music(rate int) []int16 {
	beat := 60 / musicBPM
	bar := 4 * beat
	n := int(float64(len(musicChords)) * bar * float64(rate))
	buf := make([]float64, n)
	for i, ch := range musicChords {
		start := float64(i) * bar
		addNote(buf, rate, start, bar+0.6, midiHz(ch[0]), 0.55, 1.8, 0.02)
		for k, idx := range musicPattern {
			addNote(buf, rate, start+float64(k)*beat/2, 1.6, midiHz(ch[1+idx]), 0.32, 0.55, 0.004)
		}
	}
	var peak float64
	for _, v := range buf {
		peak = math.Max(peak, math.Abs(v))
	}
	out := make([]int16, n)
	for i, v := range buf {
		out[i] = int16(v / peak * musicPeak * 32767)
	}
	return out
}

// addNote adds a note of frequency f starting at start seconds, lasting
// length seconds, with gain, an exponential decay of time constant
// decay and an attack of attack seconds; what runs past the buffer's end
// wraps to its start.
func addNote(buf []float64, rate int, start, length, f, gain, decay, attack float64) {
	n := len(buf)
	first := int(start * float64(rate))
	count := int(length * float64(rate))
	fade := int(0.05 * float64(rate)) // the last 50 ms fade to nothing
	for j := 0; j < count; j++ {
		t := float64(j) / float64(rate)
		env := math.Exp(-t / decay)
		if t < attack {
			env *= t / attack
		}
		if rest := count - j; rest < fade {
			env *= float64(rest) / float64(fade)
		}
		w := 2 * math.Pi * f * t
		// A plucked tone: the fundamental, a softer octave and a faint
		// fifth above it, the overtones dying sooner.
		v := math.Sin(w) + 0.25*math.Exp(-t/0.3)*math.Sin(2*w) + 0.08*math.Exp(-t/0.15)*math.Sin(3*w)
		buf[(first+j)%n] += gain * env * v
	}
}

// midiHz is the frequency of a MIDI note (A4 = 69 = 440 Hz).
func midiHz(note int) float64 { return 440 * math.Pow(2, float64(note-69)/12) }
