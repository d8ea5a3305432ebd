package echo

import "math"

// vadConfig is the energy VAD's tuning.
type vadConfig struct {
	// thresholdDBFS is the frame energy above which a frame is voiced.
	thresholdDBFS float64
	// silenceMs of unvoiced frames end a turn (the hangover).
	silenceMs int
	// prefixMs of audio before the onset belong to the turn.
	prefixMs int
	// minSpeechMs of consecutive voiced frames start a turn, so clicks do
	// not.
	minSpeechMs int
}

// thresholdDBFS maps the protocol's 0..1 threshold to an energy gate:
// -70 dBFS + 60·t (0.5 → -40 dBFS, 0.9 → -16 dBFS).
func thresholdDBFS(t float64) float64 { return -70 + 60*t }

type vadEventKind int

const (
	vadStart vadEventKind = iota + 1
	vadStop
)

// vadEvent is a turn boundary at a sample position of the input stream.
type vadEvent struct {
	kind vadEventKind
	// at is the sample position: for a start, the onset minus the prefix
	// padding; for a stop, where the hangover ran out.
	at int64
	// onset is, for a start, the first voiced sample (no padding).
	onset int64
	// speechEnd is, for a stop, the end of the last voiced frame.
	speechEnd int64
}

// vad is an energy detector with hangover over 10 ms frames. It is pure: the
// input stream's sample count is its clock.
type vad struct {
	cfg        vadConfig
	rate       int
	frameLen   int
	frame      []int16
	pos        int64 // samples consumed into whole frames
	inSpeech   bool
	voicedRun  int
	silentRun  int
	lastVoiced int64
	floor      int64 // a new turn does not start before the last stop
}

func newVAD(cfg vadConfig, rate int) *vad {
	return &vad{cfg: cfg, rate: rate, frameLen: rate / 100}
}

func frameDBFS(s []int16) float64 {
	var sum float64
	for _, v := range s {
		f := float64(v)
		sum += f * f
	}
	rms := math.Sqrt(sum / float64(len(s)))
	if rms < 1 {
		return -100
	}
	return 20 * math.Log10(rms/32768)
}

func (v *vad) msToSamples(ms int) int64 { return int64(ms) * int64(v.rate) / 1000 }

// push feeds samples and appends the turn boundaries they complete to dst.
func (v *vad) push(dst []vadEvent, s []int16) []vadEvent {
	for len(s) > 0 {
		n := min(v.frameLen-len(v.frame), len(s))
		v.frame = append(v.frame, s[:n]...)
		s = s[n:]
		if len(v.frame) < v.frameLen {
			break
		}
		start := v.pos
		v.pos += int64(v.frameLen)
		voiced := frameDBFS(v.frame) >= v.cfg.thresholdDBFS
		v.frame = v.frame[:0]
		if voiced {
			v.voicedRun++
			v.silentRun = 0
			v.lastVoiced = v.pos
			if !v.inSpeech && v.voicedRun*10 >= max(10, v.cfg.minSpeechMs) {
				v.inSpeech = true
				onset := start - int64(v.voicedRun-1)*int64(v.frameLen)
				dst = append(dst, vadEvent{kind: vadStart, at: max(v.floor, onset-v.msToSamples(v.cfg.prefixMs), 0), onset: onset})
			}
			continue
		}
		v.voicedRun = 0
		if v.inSpeech {
			v.silentRun++
			if v.silentRun*10 >= v.cfg.silenceMs {
				v.inSpeech = false
				v.silentRun = 0
				v.floor = v.pos
				dst = append(dst, vadEvent{kind: vadStop, at: v.pos, speechEnd: v.lastVoiced})
			}
		}
	}
	return dst
}

// reset forgets the partial frame and any turn in progress, keeping the
// stream position (input_audio_buffer.clear).
func (v *vad) reset() {
	v.pos += int64(len(v.frame))
	v.frame = v.frame[:0]
	v.inSpeech, v.voicedRun, v.silentRun = false, 0, 0
	v.floor = v.pos
}
