package dtmf

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// speechVoices are the espeak-ng voices, pitches and speeds used to make
// varied speech (male, female, low, high, slow, fast).
var speechVoices = []struct {
	voice        string
	pitch, speed int
}{
	{"en-us+m3", 35, 150},
	{"en-us+f3", 80, 140},
	{"en-gb+m1", 20, 175},
	{"en-gb+f4", 95, 160},
	{"en+m7", 50, 130},
	{"en+f2", 65, 190},
	{"en-us+klatt", 40, 165},
	{"en-gb-scotland+f1", 75, 150},
}

var (
	speechOnce sync.Once
	speechPCM  []int16
	speechErr  error
)

// loadSpeech synthesizes at least 10 minutes of 8 kHz speech with espeak-ng
// and sox: testdata/speech.txt in every voice of speechVoices, then the
// whole again pitch-shifted by resampling, until 10 minutes are reached.
func loadSpeech(t *testing.T) []int16 {
	t.Helper()
	speechOnce.Do(func() {
		for _, tool := range []string{"espeak-ng", "sox"} {
			if _, err := exec.LookPath(tool); err != nil {
				speechErr = err
				return
			}
		}
		dir, err := os.MkdirTemp("", "dtmf-speech-")
		if err != nil {
			speechErr = err
			return
		}
		defer os.RemoveAll(dir)
		var raw []int16
		for i, v := range speechVoices {
			out := filepath.Join(dir, "v"+string(rune('0'+i))+".raw")
			cmd := exec.Command("sh", "-c",
				`espeak-ng -v "$1" -p "$2" -s "$3" --stdout -f "$4" | sox -t wav - -t raw -r 8000 -e signed -b 16 -c 1 "$5"`,
				"sh", v.voice, strconv.Itoa(v.pitch), strconv.Itoa(v.speed), filepath.Join("testdata", "speech.txt"), out)
			if b, err := cmd.CombinedOutput(); err != nil {
				speechErr = &execError{err: err, out: string(b)}
				return
			}
			pcm, err := readRaw(out)
			if err != nil {
				speechErr = err
				return
			}
			raw = append(raw, pcm...)
		}
		all := raw
		for _, ratio := range []float64{1.09, 0.93, 1.17} {
			if len(all) >= 10*60*DetectorSampleRate {
				break
			}
			all = append(all, resample(raw, ratio)...)
		}
		speechPCM = all
	})
	require.NoError(t, speechErr, "espeak-ng and sox are needed for the talk-off test")
	require.GreaterOrEqual(t, len(speechPCM), 10*60*DetectorSampleRate)
	return speechPCM
}

// resample reads pcm at ratio times the speed (linear interpolation), which
// shifts every frequency by ratio.
func resample(pcm []int16, ratio float64) []int16 {
	n := int(float64(len(pcm)-1) / ratio)
	out := make([]int16, n)
	for i := range out {
		p := float64(i) * ratio
		j := int(p)
		f := p - float64(j)
		out[i] = int16(float64(pcm[j])*(1-f) + float64(pcm[j+1])*f)
	}
	return out
}

func TestDetectorTalkOffSpeech(t *testing.T) {
	speech := loadSpeech(t)
	got, evs := detect(t, speech, 160, DetectorOptions{})
	for _, ev := range evs {
		t.Logf("false %c at %v", ev.Digit, ev.At.Sub(time.Unix(1_700_000_000, 0)))
	}
	require.Empty(t, got, "talk-off on %v of speech", time.Duration(len(speech))*time.Second/DetectorSampleRate)

	// Louder speech (+10 dB, clipped) must not talk off either.
	loud := make([]int16, len(speech)/4)
	for i := range loud {
		loud[i] = int16(max(-32768, min(32767, float64(speech[i])*3.16)))
	}
	got, _ = detect(t, loud, 160, DetectorOptions{})
	require.Empty(t, got)
}

func TestDetectorDigitsOverSpeech(t *testing.T) {
	speech := loadSpeech(t)
	// Speech about 10 dB below the tones: a caller talking over the keypad.
	mix := make([]float64, 30*DetectorSampleRate)
	for i := range mix {
		mix[i] = float64(speech[i+5*DetectorSampleRate]) * 0.5
	}
	keys := "0123456789*#ABCD5551234#"
	pos := 4000
	for i := range len(keys) {
		pos = addTone(mix, pos, keys[i], toneSpec{level: -8, twist: 2, on: 80 * time.Millisecond, off: 1000 * time.Millisecond})
	}
	got, _ := detect(t, toPCM(mix), 160, DetectorOptions{})
	require.Equal(t, keys, got)
}

func TestDetectorTalkOffMusic(t *testing.T) {
	const seconds = 120
	rng := rand.New(rand.NewPCG(4733, 24))
	music := make([]float64, seconds*DetectorSampleRate)
	// Chords: three to four notes of the equal-tempered scale from C4 to C7
	// (which includes F5 = 698.5 Hz and F#6 = 1480 Hz, within 0.2% of two
	// DTMF tones) with harmonics decaying as 1/n, like most instruments,
	// held 100 to 600 ms with a decaying envelope.
	for pos := 0; pos < len(music)/2; {
		dur := 800 + rng.IntN(4000)
		nnotes := 3 + rng.IntN(2)
		for range nnotes {
			note := 60 + rng.IntN(37) // MIDI C4..C7
			f0 := 440 * math.Pow(2, float64(note-69)/12)
			ph := rng.Float64() * 2 * math.Pi
			for h := 1; h <= 6; h++ {
				f := f0 * float64(h)
				if f > 3800 {
					break
				}
				amp := 4000 / float64(h)
				for i := 0; i < dur && pos+i < len(music); i++ {
					env := math.Exp(-float64(i) / float64(dur))
					music[pos+i] += amp * env * math.Sin(2*math.Pi*f*float64(i)/DetectorSampleRate+ph*float64(h))
				}
			}
		}
		pos += dur
	}
	// Sweeps (glissandi): two voices sliding at once, one through the low
	// group's range and one the other way through the high group's, so that
	// they cross row and column frequencies at the same moments, each with
	// harmonics decaying as 1/n like an instrument or a voice. (Two pure
	// sines that dwell 25 ms within 2.5% of a row and a column frequency
	// are a DTMF tone by definition; no detector can refuse them.)
	for pos := len(music) / 2; pos < len(music); {
		dur := 4000 + rng.IntN(8000)
		lo0, lo1 := 600+rng.Float64()*100, 900+rng.Float64()*100
		hi0, hi1 := 1700+rng.Float64()*100, 1150+rng.Float64()*100
		var p1, p2 float64
		for i := 0; i < dur && pos+i < len(music); i++ {
			x := float64(i) / float64(dur)
			p1 += 2 * math.Pi * (lo0 + (lo1-lo0)*x) / DetectorSampleRate
			p2 += 2 * math.Pi * (hi0 + (hi1-hi0)*x) / DetectorSampleRate
			for h := 1.0; h <= 3; h++ {
				music[pos+i] += 6000/h*math.Sin(h*p1) + 5000/h*math.Sin(h*p2)
			}
		}
		pos += dur
	}
	got, evs := detect(t, toPCM(music), 160, DetectorOptions{})
	for _, ev := range evs {
		t.Logf("false %c at %v", ev.Digit, ev.At.Sub(time.Unix(1_700_000_000, 0)))
	}
	require.Empty(t, got)
}

type execError struct {
	err error
	out string
}

func (e *execError) Error() string { return e.err.Error() + ": " + e.out }

// readRaw reads 16-bit little-endian mono PCM.
func readRaw(path string) ([]int16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm, nil
}
