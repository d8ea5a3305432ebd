package amd

import (
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
	"switchboard/media/wav"
)

const rate = 8000

func silence(d time.Duration) []int16 { return make([]int16, int(d.Seconds()*rate)) }

// tone is a pure tone of f Hz at amplitude a.
func tone(f float64, a float64, d time.Duration) []int16 {
	out := make([]int16, int(d.Seconds()*rate))
	for i := range out {
		out[i] = int16(a * math.Sin(2*math.Pi*f*float64(i)/rate))
	}
	return out
}

// voice is a speech-like sound: a gliding pitch with eight harmonics,
// syllables of 180 ms at a slow amplitude wobble, and a little noise.
// Its energy is spread over many frequencies, as speech's is.
func voice(d time.Duration, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int16, int(d.Seconds()*rate))
	phase := 0.0
	for i := range out {
		t := float64(i) / rate
		f0 := 120 + 40*math.Sin(2*math.Pi*1.3*t)
		phase += 2 * math.Pi * f0 / rate
		var v float64
		for h := 1; h <= 8; h++ {
			v += math.Sin(float64(h)*phase) / float64(h)
		}
		env := 0.6 + 0.4*math.Sin(2*math.Pi*t/0.36)
		out[i] = int16(3000*env*v + 200*r.NormFloat64())
	}
	return out
}

func cat(parts ...[]int16) []int16 {
	var out []int16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// step is one event of a run and when (audio time) it came.
type step struct {
	ev Event
	at time.Duration
}

// run feeds pcm to a fresh detector in 20 ms frames (or the size given)
// and returns every event.
func run(t *testing.T, opts Options, pcm []int16, frame int) []step {
	t.Helper()
	d := New(opts)
	var out []step
	n := 0
	for len(pcm) > 0 {
		k := min(frame, len(pcm))
		if ev := d.Frame(pcm[:k]); ev != None {
			out = append(out, step{ev, time.Duration(n+k) * time.Second / rate})
		}
		n += k
		pcm = pcm[k:]
	}
	return out
}

func events(steps []step) []Event {
	out := make([]Event, len(steps))
	for i, s := range steps {
		out[i] = s.ev
	}
	return out
}

func TestClassifiesSyntheticCallees(t *testing.T) {
	beep := tone(1000, 8000, 400*time.Millisecond)
	for _, tc := range []struct {
		name  string
		pcm   []int16
		want  []Event
		at    []time.Duration // when each event comes, ±60 ms
		frame int
	}{
		{"silent callee", silence(5 * time.Second), []Event{Unknown}, []time.Duration{2500 * time.Millisecond}, 160},
		{"short hello", cat(silence(300*time.Millisecond), voice(600*time.Millisecond, 1), silence(3*time.Second)),
			[]Event{Human}, []time.Duration{1700 * time.Millisecond}, 160},
		{"hello, pause, hello", cat(voice(500*time.Millisecond, 2), silence(500*time.Millisecond), voice(400*time.Millisecond, 3), silence(2*time.Second)),
			[]Event{Human}, []time.Duration{2200 * time.Millisecond}, 80},
		{"long greeting then beep", cat(silence(200*time.Millisecond), voice(8*time.Second, 4), silence(500*time.Millisecond), beep, silence(2*time.Second)),
			[]Event{Machine, Beep}, []time.Duration{2220 * time.Millisecond, 9120 * time.Millisecond}, 160},
		{"long greeting, no beep", cat(voice(4*time.Second, 5), silence(4*time.Second)),
			[]Event{Machine, Silence}, []time.Duration{2020 * time.Millisecond, 6500 * time.Millisecond}, 240},
		{"beep at once", cat(silence(300*time.Millisecond), beep, silence(time.Second)),
			[]Event{Machine, Beep}, []time.Duration{420 * time.Millisecond, 720 * time.Millisecond}, 160},
		{"greeting that never ends", voice(40*time.Second, 6), []Event{Machine, Timeout}, []time.Duration{2000 * time.Millisecond, 30 * time.Second}, 160},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := run(t, Options{}, tc.pcm, tc.frame)
			require.Equal(t, tc.want, events(steps))
			for i, s := range steps {
				require.InDelta(t, tc.at[i].Seconds(), s.at.Seconds(), 0.06, "%s at %s", s.ev, s.at)
			}
		})
	}
}

// TestSpeechIsNoBeep: no block of speech-like sound, at any pitch, is
// taken for a beep, while tones across the beep band are.
func TestSpeechIsNoBeep(t *testing.T) {
	for seed := uint64(10); seed < 20; seed++ {
		d := New(Options{})
		d.Frame(voice(3*time.Second, seed))
		require.False(t, d.beepSeen, "seed %d", seed)
	}
	for _, f := range []float64{350, 440, 853, 1000, 1337, 1400, 2000, 2450} {
		d := New(Options{})
		d.Frame(tone(f, 4000, 200*time.Millisecond))
		require.True(t, d.beepSeen, "%.0f Hz", f)
	}
	// A dual tone (a DTMF key) is no beep.
	a, b := tone(697, 4000, 300*time.Millisecond), tone(1209, 4000, 300*time.Millisecond)
	for i := range a {
		a[i] += b[i]
	}
	d := New(Options{})
	d.Frame(a)
	require.False(t, d.beepSeen, "a DTMF key")
}

// espeak renders text with espeak-ng and returns it at 8 kHz through
// G.711 (what a phone call's callee sounds like).
func espeak(t *testing.T, text string) []int16 {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (apt install espeak-ng sox)", tool)
	}
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "raw.wav"), filepath.Join(dir, "8k.wav")
	b, err := exec.Command("espeak-ng", "-v", "en-us", "-w", raw, text).CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "8000", "-c", "1", "-b", "16", out).CombinedOutput()
	require.NoError(t, err, "%s", b)
	a, err := wav.ReadFile(out)
	require.NoError(t, err)
	g := media.PCMU.EncodeFrame(nil, a.Samples)
	return media.PCMU.DecodeFrame(nil, g)
}

func TestClassifiesEspeakCallees(t *testing.T) {
	hello := espeak(t, "Hello?")
	greeting := espeak(t, "Hi, you have reached the voicemail of Alex Morgan. I can't take your call right now. "+
		"Please leave your name, your number and a short message after the tone, and I will call you back as soon as I can. Thank you.")
	require.Greater(t, len(greeting), 8*rate, "the greeting lasts %d samples", len(greeting))
	beep := tone(1000, 10000, 500*time.Millisecond)

	steps := run(t, Options{}, cat(silence(400*time.Millisecond), hello, silence(3*time.Second)), 160)
	require.Equal(t, []Event{Human}, events(steps))
	require.Less(t, steps[0].at, 2500*time.Millisecond, "a person is heard as one within about a second of their hello")

	steps = run(t, Options{}, cat(silence(300*time.Millisecond), greeting, silence(600*time.Millisecond), beep, silence(3*time.Second)), 160)
	require.Equal(t, []Event{Machine, Beep}, events(steps))
	require.Less(t, steps[0].at, 3*time.Second, "a machine is known within the first seconds of its greeting")
	end := 300*time.Millisecond + time.Duration(len(greeting))*time.Second/rate + 1100*time.Millisecond
	require.InDelta(t, end.Seconds(), steps[1].at.Seconds(), 0.1, "the message starts as the beep ends")
}

func TestSixteenKilohertz(t *testing.T) {
	d := New(Options{Rate: 16000})
	up := func(p []int16) []int16 { // 8 → 16 kHz by repetition: enough for levels and a tone
		out := make([]int16, 2*len(p))
		for i, v := range p {
			out[2*i], out[2*i+1] = v, v
		}
		return out
	}
	require.Equal(t, None, d.Frame(up(voice(time.Second, 7))))
	require.Equal(t, Human, d.Frame(up(silence(time.Second))))
	require.Equal(t, ReasonShortGreeting, d.Reason())
	require.InDelta(t, 1.0, d.Greeting().Seconds(), 0.05)
}

func TestFrameDoesNotAllocate(t *testing.T) {
	d := New(Options{})
	pcm := voice(time.Second, 8)
	n := testing.AllocsPerRun(50, func() { d.Frame(pcm[:160]) })
	require.Zero(t, n)
}

// BenchmarkFrame is the per-frame cost of the detector on speech (every
// block voiced, so the Goertzel bank runs), 20 ms frames at 8 kHz.
func BenchmarkFrame(b *testing.B) {
	pcm := voice(10*time.Second, 9)
	d := New(Options{MaxGreeting: time.Hour, MaxAnalysis: time.Hour})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := (i * 160) % (len(pcm) - 160)
		d.Frame(pcm[off : off+160])
	}
}
