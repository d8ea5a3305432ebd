package test

import (
	"context"
	be "encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/dtmf"
)

const rate = 8000

var (
	speechOnce sync.Once
	speechPCM  []int16
	speechErr  error
)

// speech returns a few seconds of espeak-ng speech at 8 kHz, scaled to an
// RMS of -20 dBFS.
func speech(t *testing.T) []int16 {
	t.Helper()
	speechOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dtmf-speech-")
		if err != nil {
			speechErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "s.raw")
		cmd := exec.Command("sh", "-c", `espeak-ng -v en-us+f3 -s 170 --stdout "$1" | sox -t wav - -t raw -r 8000 -e signed -b 16 -c 1 "$2"`, "sh",
			"Hello, I would like to check the balance of my account, and then talk to somebody about my last bill, please. Thank you very much.", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			speechErr = &cmdError{err: err, out: string(b)}
			return
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			speechErr = err
			return
		}
		pcm := make([]int16, len(raw)/2)
		var sum float64
		for i := range pcm {
			pcm[i] = int16(be.LittleEndian.Uint16(raw[2*i:]))
			sum += float64(pcm[i]) * float64(pcm[i])
		}
		g := 32767 * math.Pow(10, -20.0/20) / math.Sqrt(sum/float64(len(pcm)))
		for i := range pcm {
			pcm[i] = int16(max(-32768, min(32767, float64(pcm[i])*g)))
		}
		speechPCM = pcm
	})
	require.NoError(t, speechErr, "espeak-ng and sox are needed")
	require.Greater(t, len(speechPCM), 4*rate)
	return speechPCM
}

type cmdError struct {
	err error
	out string
}

func (e *cmdError) Error() string { return e.err.Error() + ": " + e.out }

// mix builds a caller's audio as float samples.
type mix struct {
	pcm []float64
	pos int
}

// speech adds d of speech (from offset `from` of the utterance) at gain dB
// relative to -20 dBFS, starting at the current position, and advances.
func (m *mix) speech(sp []int16, from, d time.Duration, gain float64, advance bool) {
	n := int(d * rate / time.Second)
	off := int(from * rate / time.Second)
	g := math.Pow(10, gain/20)
	m.grow(m.pos + n)
	for i := 0; i < n; i++ {
		m.pcm[m.pos+i] += float64(sp[(off+i)%len(sp)]) * g
	}
	if advance {
		m.pos += n
	}
}

// generated adds keys from dtmf.ToneGenerator at level (dBFS per tone).
func (m *mix) generated(t *testing.T, keys string, level float64, on, off time.Duration) {
	t.Helper()
	g := dtmf.NewToneGenerator(dtmf.ToneOptions{Level: level})
	buf := make([]int16, int(on*rate/time.Second))
	for i := 0; i < len(keys); i++ {
		require.NoError(t, g.Start(keys[i]))
		g.Generate(buf)
		g.Stop()
		m.grow(m.pos + len(buf))
		for j, v := range buf {
			m.pcm[m.pos+j] += float64(v)
		}
		m.pos += len(buf) + int(off*rate/time.Second)
	}
}

// twisted adds keys with each tone at its own level (dBFS): low-group
// tone at low, high-group tone at high.
func (m *mix) twisted(keys string, low, high float64, on, off time.Duration) {
	n := int(on * rate / time.Second)
	a1, a2 := 32767*math.Pow(10, low/20), 32767*math.Pow(10, high/20)
	for i := 0; i < len(keys); i++ {
		f1, f2, _ := dtmf.Frequencies(keys[i])
		m.grow(m.pos + n)
		for j := 0; j < n; j++ {
			x := float64(j) / rate
			m.pcm[m.pos+j] += a1*math.Sin(2*math.Pi*f1*x) + a2*math.Sin(2*math.Pi*f2*x+1)
		}
		m.pos += n + int(off*rate/time.Second)
	}
}

func (m *mix) silence(d time.Duration) { m.pos += int(d * rate / time.Second); m.grow(m.pos) }

func (m *mix) grow(n int) {
	if n > len(m.pcm) {
		m.pcm = append(m.pcm, make([]float64, n-len(m.pcm))...)
	}
}

// noise adds white noise at dbfs (RMS) over everything, and returns PCM.
func (m *mix) noise(dbfs float64, seed uint64) []int16 {
	rng := rand.New(rand.NewPCG(seed, 7))
	sigma := 32767 * math.Pow(10, dbfs/20)
	out := make([]int16, len(m.pcm))
	for i, v := range m.pcm {
		out[i] = int16(max(-32768, min(32767, math.Round(v+rng.NormFloat64()*sigma))))
	}
	return out
}

// TestDTMFInbandTones calls with PCMU only (no telephone-event) and plays
// keys as tones at several levels and twists, between and under speech,
// over noise: the model receives every digit exactly once, in order, and
// nothing from the speech.
func TestDTMFInbandTones(t *testing.T) {
	t.Parallel()
	sp := speech(t)
	const on, off = 70 * time.Millisecond, 90 * time.Millisecond
	var m mix
	m.speech(sp, 0, 1200*time.Millisecond, 0, true)
	// Loud generated tones with speech 14 dB below them underneath.
	m.speech(sp, 1200*time.Millisecond, 4*(on+off), -4, false)
	m.generated(t, "123#", -10, on, off)
	m.speech(sp, 2000*time.Millisecond, 900*time.Millisecond, 0, true)
	// Weak generated tones (-26 dBFS each, about -23 dBm0) over noise.
	m.generated(t, "456#", -26, on, off)
	// Normal twist: the high-group tone 6 dB weaker.
	m.twisted("789#", -14, -20, on, off)
	m.speech(sp, 3000*time.Millisecond, 900*time.Millisecond, 0, true)
	// Reverse twist: the high-group tone 3 dB stronger; the A-D keys.
	m.twisted("*0AD#", -19, -16, on, off)
	m.speech(sp, 4000*time.Millisecond, 700*time.Millisecond, 0, true)
	pcm := m.noise(-55, 1)

	e := newDTMFEnv(t)
	p := e.dial(t, e.number(t, nil), callerOptions{NoEvents: true})
	c := e.accept(t)
	live := e.liveCall(t)
	t.Cleanup(func() {
		if t.Failed() {
			st := live.Snapshot().Media
			t.Logf("keys %v; daemon media: in %d lost %d late %d jitter %v", e.keyLogs(), st.PacketsIn, st.Lost, st.Late, st.Jitter)
		}
	})
	p.play(pcm)
	ctx := ctxFor(t, time.Duration(len(pcm))*time.Second/rate+10*time.Second)
	for _, want := range []string{"123", "456", "789", "*0AD"} {
		require.Equal(t, modelText(want, dtmf.FlushHash), userText(t, ctx, c))
	}
	// No digit may come from the speech: the rest of it plays out first.
	p.playedOut(t, live, 15)
	require.Len(t, userTexts(c), 4, "no digit from the speech after the last key")
	var keys string
	for _, k := range e.keyLogs() {
		require.Equal(t, "inband", k[2:])
		keys += k[:1]
	}
	require.Equal(t, "123#456#789#*0AD#", keys)
}

// TestDTMFInbandSetting checks the agent's dtmf_inband: "off" ignores
// tones, "on" listens even when telephone-event was negotiated (and keeps
// one of each press that also came as SIP INFO), "auto" does not listen
// then.
func TestDTMFInbandSetting(t *testing.T) {
	t.Parallel()
	const on, off = 80 * time.Millisecond, 220 * time.Millisecond
	t.Run("validation", func(t *testing.T) {
		t.Parallel()
		e := newDTMFEnv(t)
		st, _, raw := e.d.Do(t, "POST", "/v1/agents", e.d.OwnerKey, map[string]any{"name": "x", "dtmf_inband": "sometimes"})
		require.Equal(t, 400, st)
		_, param, _ := apptest.ErrorOf(t, raw)
		require.Equal(t, "dtmf_inband", param)
		a := e.d.JSON(t, "POST", "/v1/agents", e.d.OwnerKey, map[string]any{"name": "y", "dtmf_inband": " ON "}, 200)
		require.Equal(t, "on", a["dtmf_inband"])
		a = e.d.JSON(t, "PATCH", "/v1/agents/"+a["agent_id"].(string), e.d.OwnerKey, map[string]any{"dtmf_inband": "off"}, 200)
		require.Equal(t, "off", a["dtmf_inband"])
		// The number's own setting.
		st, _, raw = e.d.Do(t, "POST", "/v2/phone-numbers", e.d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "x",
			"phone_number": "+14155557001", "agent_id": a["agent_id"], "dtmf_inband": "sometimes"})
		require.Equal(t, 400, st)
		_, param, _ = apptest.ErrorOf(t, raw)
		require.Equal(t, "dtmf_inband", param)
		n := e.d.JSON(t, "POST", "/v2/phone-numbers", e.d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "x",
			"phone_number": "+14155557001", "agent_id": a["agent_id"], "dtmf_inband": "On"}, 200)["phone_number"].(map[string]any)
		require.Equal(t, "on", n["dtmf_inband"])
		n = e.d.JSON(t, "PATCH", "/v2/phone-numbers/"+n["phone_number_id"].(string), e.d.OwnerKey, map[string]any{"dtmf_inband": "off"}, 200)["phone_number"].(map[string]any)
		require.Equal(t, "off", n["dtmf_inband"])
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		e := newDTMFEnv(t)
		p := e.dial(t, e.number(t, map[string]any{"dtmf_inband": "off"}), callerOptions{NoEvents: true})
		c := e.accept(t)
		var m mix
		m.silence(100 * time.Millisecond)
		m.generated(t, "5#", -10, on, off)
		p.play(m.noise(-60, 2))
		// No key may be detected: the tones play out first.
		p.playedOut(t, e.liveCall(t), 25)
		require.Empty(t, e.keyLogs())
		require.Empty(t, userTexts(c))
	})
	// Tones 2, 4, # and INFO 2, 6, # at the same instants: with "on" the
	// model gets 246 (2 and # once each); with "auto" the tones are not
	// listened to (events were negotiated) and it gets 26.
	// "number on": the agent says nothing (auto) but the number says on;
	// the number's setting wins.
	for _, tc := range []struct {
		name, setting, want string
		settings            map[string]any
	}{
		{"on", "on", "246", map[string]any{"dtmf_inband": "on"}},
		{"auto", "auto", "26", map[string]any{"dtmf_inband": "auto"}},
		{"number on", "on", "246", map[string]any{"number.dtmf_inband": "on"}},
		{"number off over agent on", "auto", "26", map[string]any{"dtmf_inband": "on", "number.dtmf_inband": "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDTMFEnv(t)
			p := e.dial(t, e.number(t, tc.settings), callerOptions{})
			c := e.accept(t)
			var m mix
			m.silence(200 * time.Millisecond)
			m.generated(t, "24", -12, on, off)
			m.silence(on + off)
			m.generated(t, "#", -12, on, off)
			live := e.liveCall(t)
			start := p.sess.Stats().PacketsOut
			p.play(m.noise(-60, 3))
			slot := on + off
			for i, info := range []string{"2", "", "6", "#"} {
				// Each INFO goes in its tone slot of the audio as the caller sends it.
				p.sentFor(t, start, 200*time.Millisecond+time.Duration(i)*slot+30*time.Millisecond)
				if info == "" {
					continue
				}
				ictx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				require.NoError(t, p.oc.SendInfo(ictx, dtmf.ContentTypeDTMF, []byte(info)))
				cancel()
			}
			ctx := ctxFor(t, 10*time.Second)
			require.Equal(t, modelText(tc.want, dtmf.FlushHash), userText(t, ctx, c))
			// No second flush may come: the rest of the audio and half a
			// second more pass through the call first.
			p.playedOut(t, live, 25)
			require.Len(t, userTexts(c), 1)
			keys := e.keyLogs()
			require.Len(t, keys, len(tc.want)+1, "%v", keys)
			if tc.setting == "on" {
				require.Equal(t, "4/inband", keys[1], "the tone-only key comes from the detector")
			}
		})
	}
}
