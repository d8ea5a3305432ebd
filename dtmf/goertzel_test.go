package dtmf

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// toneSpec describes a synthetic key press.
type toneSpec struct {
	level     float64 // composite level in dBFS (both tones together)
	twist     float64 // dB, low minus high (positive: high group weaker)
	lowShift  float64 // relative frequency shift of the low tone
	highShift float64 // relative frequency shift of the high tone
	on, off   time.Duration
}

// addTone adds the dual tone of d to pcm starting at sample start.
func addTone(pcm []float64, start int, d byte, s toneSpec) int {
	lo, hi, ok := Frequencies(d)
	if !ok {
		panic("bad digit")
	}
	lo *= 1 + s.lowShift
	hi *= 1 + s.highShift
	// Composite power P = (a1^2 + a2^2)/2 relative to a full-scale sine's 1/2.
	total := math.Pow(10, s.level/10) // a1^2 + a2^2
	r := math.Pow(10, s.twist/10)     // a1^2 / a2^2
	a2 := math.Sqrt(total / (1 + r))
	a1 := math.Sqrt(total - a2*a2)
	n := int(s.on * DetectorSampleRate / time.Second)
	for i := 0; i < n && start+i < len(pcm); i++ {
		t := float64(i) / DetectorSampleRate
		pcm[start+i] += 32767 * (a1*math.Sin(2*math.Pi*lo*t) + a2*math.Sin(2*math.Pi*hi*t+0.7))
	}
	return start + n + int(s.off*DetectorSampleRate/time.Second)
}

// sequence renders keys one after another into float audio, with a leading
// pause.
func sequence(keys string, s toneSpec) []float64 {
	per := int((s.on + s.off) * DetectorSampleRate / time.Second)
	pcm := make([]float64, 800+per*len(keys))
	pos := 800
	for i := range len(keys) {
		pos = addTone(pcm, pos, keys[i], s)
	}
	return pcm
}

func addNoise(pcm []float64, dbfs float64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	sigma := 32767 * math.Sqrt(math.Pow(10, dbfs/10)/2) // rms of a sine at that level
	for i := range pcm {
		pcm[i] += rng.NormFloat64() * sigma
	}
}

func toPCM(f []float64) []int16 {
	out := make([]int16, len(f))
	for i, v := range f {
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return out
}

// detect runs a fresh Detector over pcm in frames of the given size and
// returns the keys found.
func detect(t testing.TB, pcm []int16, frame int, opts DetectorOptions) (string, []Event) {
	t.Helper()
	d := NewDetector(opts)
	base := time.Unix(1_700_000_000, 0)
	var evs []Event
	for i := 0; i < len(pcm); i += frame {
		j := min(i+frame, len(pcm))
		evs = d.Process(evs, pcm[i:j], base.Add(time.Duration(i)*time.Second/DetectorSampleRate))
	}
	keys := make([]byte, len(evs))
	for i, e := range evs {
		keys[i] = e.Digit
	}
	return string(keys), evs
}

const allKeys = "123A456B789C*0#D"

func TestDetectorLevelsAndTwist(t *testing.T) {
	for _, level := range []float64{-3, -10, -15, -20, -25} {
		for _, twist := range []float64{-3, 0, 6} {
			s := toneSpec{level: level, twist: twist, on: 60 * time.Millisecond, off: 60 * time.Millisecond}
			pcm := toPCM(sequence(allKeys, s))
			got, _ := detect(t, pcm, 160, DetectorOptions{})
			require.Equal(t, allKeys, got, "level %v dBFS twist %v dB", level, twist)
		}
	}
}

func TestDetectorAcceptReject(t *testing.T) {
	const on, off = 60 * time.Millisecond, 60 * time.Millisecond
	tests := []struct {
		name   string
		spec   toneSpec
		noise  float64 // dBFS of white noise, 0 for none
		accept bool
	}{
		{name: "normal twist 7 dB", spec: toneSpec{level: -10, twist: 7}, accept: true},
		{name: "reverse twist 3 dB", spec: toneSpec{level: -10, twist: -3}, accept: true},
		{name: "normal twist 10 dB", spec: toneSpec{level: -10, twist: 10}},
		{name: "reverse twist 6 dB", spec: toneSpec{level: -10, twist: -6}},
		{name: "low +1.5%", spec: toneSpec{level: -10, lowShift: 0.015}, accept: true},
		{name: "low -1.5%", spec: toneSpec{level: -10, lowShift: -0.015}, accept: true},
		{name: "high +1.5%", spec: toneSpec{level: -10, highShift: 0.015}, accept: true},
		{name: "both -1.5%", spec: toneSpec{level: -10, lowShift: -0.015, highShift: -0.015}, accept: true},
		{name: "low +3.5%", spec: toneSpec{level: -10, lowShift: 0.035}},
		{name: "low -3.5%", spec: toneSpec{level: -10, lowShift: -0.035}},
		{name: "high +3.5%", spec: toneSpec{level: -10, highShift: 0.035}},
		{name: "high -3.5%", spec: toneSpec{level: -10, highShift: -0.035}},
		{name: "too quiet", spec: toneSpec{level: -45}},
		{name: "SNR 20 dB", spec: toneSpec{level: -15}, noise: -35, accept: true},
		{name: "SNR 15 dB twist", spec: toneSpec{level: -20, twist: 4}, noise: -35, accept: true},
		{name: "SNR 10 dB", spec: toneSpec{level: -20}, noise: -30, accept: true},
		{name: "noise only", spec: toneSpec{level: -90}, noise: -10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.on, tc.spec.off = on, off
			f := sequence(allKeys, tc.spec)
			if tc.noise != 0 {
				addNoise(f, tc.noise, 7)
			}
			got, _ := detect(t, toPCM(f), 160, DetectorOptions{})
			if tc.accept {
				require.Equal(t, allKeys, got)
			} else {
				require.Empty(t, got)
			}
		})
	}
}

func TestDetectorTiming(t *testing.T) {
	tests := []struct {
		name    string
		on, off time.Duration
		keys    string
		want    string
	}{
		{name: "40 ms tones 40 ms pauses", on: 40 * time.Millisecond, off: 40 * time.Millisecond, keys: allKeys, want: allKeys},
		{name: "repeat key, 40 ms pause", on: 50 * time.Millisecond, off: 40 * time.Millisecond, keys: "5555", want: "5555"},
		{name: "20 ms tones rejected", on: 20 * time.Millisecond, off: 60 * time.Millisecond, keys: allKeys, want: ""},
		{name: "long key once", on: 2 * time.Second, off: 100 * time.Millisecond, keys: "7", want: "7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pcm := toPCM(sequence(tc.keys, toneSpec{level: -10, on: tc.on, off: tc.off}))
			got, _ := detect(t, pcm, 160, DetectorOptions{})
			require.Equal(t, tc.want, got)
		})
	}

	t.Run("drop-out bridged", func(t *testing.T) {
		f := sequence("9", toneSpec{level: -10, on: 300 * time.Millisecond, off: 100 * time.Millisecond})
		// 10 ms of silence in the middle of the tone.
		clear(f[800+1200 : 800+1280])
		got, _ := detect(t, toPCM(f), 160, DetectorOptions{})
		require.Equal(t, "9", got)
	})
}

func TestDetectorFrameSizes(t *testing.T) {
	pcm := toPCM(sequence(allKeys, toneSpec{level: -12, on: 70 * time.Millisecond, off: 50 * time.Millisecond}))
	_, ref := detect(t, pcm, len(pcm), DetectorOptions{})
	require.Len(t, ref, len(allKeys))
	base := time.Unix(1_700_000_000, 0)
	for i, ev := range ref {
		// Tone i starts at sample 800 + i*960; At is the start of the
		// first hit block, within one block of it.
		start := base.Add(time.Duration(800+i*960) * time.Second / DetectorSampleRate)
		require.InDelta(t, 0, ev.At.Sub(start).Seconds(), 0.0128, "key %d", i)
		require.Equal(t, SourceInband, ev.Source)
	}
	for _, frame := range []int{1, 7, 80, 101, 102, 160, 240, 1000} {
		got, evs := detect(t, pcm, frame, DetectorOptions{})
		require.Equal(t, allKeys, got, "frame %d", frame)
		require.Equal(t, ref, evs, "frame %d", frame)
	}
}

func BenchmarkDetector20ms(b *testing.B) {
	pcm := toPCM(sequence("5", toneSpec{level: -10, on: time.Second, off: 0}))
	d := NewDetector(DetectorOptions{})
	dst := make([]Event, 0, 4)
	now := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		off := (i * 160) % (len(pcm) - 160)
		dst = d.Process(dst[:0], pcm[off:off+160], now)
	}
}

func TestDetectorAllocs(t *testing.T) {
	pcm := toPCM(sequence("1", toneSpec{level: -10, on: 100 * time.Millisecond, off: 100 * time.Millisecond}))
	d := NewDetector(DetectorOptions{})
	dst := make([]Event, 0, 4)
	now := time.Unix(0, 0)
	require.Zero(t, testing.AllocsPerRun(50, func() {
		for i := 0; i+160 <= len(pcm); i += 160 {
			dst = d.Process(dst[:0], pcm[i:i+160], now)
		}
	}))
}
