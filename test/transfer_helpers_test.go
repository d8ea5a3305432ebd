package test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media/wav"
	sbspeech "switchboard/speech"
	"switchboard/transfer"
)

// Frequencies of the peers' tones: the caller's and the human's, apart
// from each other and from the hold music's notes.
const (
	callerTone = 700.0
	humanTone  = 1150.0
)

// tonePCM is secs of a sine at freq (8 kHz, -12 dBFS).
func tonePCM(freq, secs float64) []int16 {
	out := make([]int16, int(secs*8000))
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*freq*float64(i)/8000))
	}
	return out
}

// writeWAV writes the parts, one after the other, as an 8 kHz mono S16
// WAV (baresip 1.0's aufile source) and returns its path.
func writeWAV(t *testing.T, dir, name string, parts ...[]int16) string {
	t.Helper()
	var pcm []int16
	for _, p := range parts {
		pcm = append(pcm, p...)
	}
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, wav.Encode(pcm, 8000), 0o600))
	return path
}

// baresipPeer is a baresip 1.0 (launchBaresip) whose microphone is a
// WAV file (it hangs up when the file ends), what it hears dumped by the
// sndfile module.
type baresipPeer struct {
	uri string // where it answers (a peer that answers)
	rec string
	out *apptest.SyncBuffer
}

// startBaresip runs baresip as user: it dials dial, or, when dial is
// empty, answers every call at once (answermode auto). It quits after
// quit.
func startBaresip(t *testing.T, user, source, dial string, quit time.Duration) *baresipPeer {
	t.Helper()
	b := launchBaresip(t, t.TempDir(), baresipConf{user: user, source: source, answer: dial == ""}, dial, quit)
	p := &baresipPeer{uri: fmt.Sprintf("sip:%s@127.0.0.1:%d", user, b.port), rec: b.rec, out: b.out}
	if dial == "" {
		// A callee: it answers once it listens on its SIP port.
		require.Eventually(t, func() bool {
			return strings.Contains(p.out.String(), "baresip is ready") || strings.Contains(p.out.String(), "Populated")
		},
			10*time.Second, 20*time.Millisecond, "baresip did not start: %s", p.out.String())
		waitUDPBound(t, b.port)
	}
	return p
}

// heard is what the peer heard in its (one) call, at 8 kHz.
func (p *baresipPeer) heard(t *testing.T) []int16 {
	t.Helper()
	var decs []string
	require.Eventually(t, func() bool {
		decs, _ = filepath.Glob(filepath.Join(p.rec, "dump-*-dec.wav"))
		return len(decs) == 1
	}, 10*time.Second, 50*time.Millisecond, "no recording: %s", tail(p.out.String(), 3000))
	require.Eventually(t, func() bool { return wavClosed(decs[0]) }, 10*time.Second, 20*time.Millisecond,
		"baresip did not close its recording: %s", tail(p.out.String(), 3000))
	pcm, rate := agentReadWAV(t, decs[0])
	require.Equal(t, 8000, rate)
	return pcm
}

// goertzel is the power of freq in pcm (8 kHz), as a share of the
// window's energy (1: a pure tone at freq).
func goertzel(pcm []int16, freq float64) float64 {
	w := 2 * math.Pi * freq / 8000
	coeff := 2 * math.Cos(w)
	var s1, s2, energy float64
	for _, v := range pcm {
		x := float64(v)
		s0 := x + coeff*s1 - s2
		s2, s1 = s1, s0
		energy += x * x
	}
	if energy == 0 {
		return 0
	}
	p := s1*s1 + s2*s2 - coeff*s1*s2
	return p / (energy * float64(len(pcm)) / 2)
}

// window classes of what a peer heard, 100 ms at a time.
const (
	heardSilence = "."
	heardCaller  = "A" // the caller's tone
	heardHuman   = "B" // the human's tone
	heardOther   = "o" // anything else: music, speech
)

// classify labels each 100 ms window of pcm.
func classify(pcm []int16) string { return classifyWin(pcm, 800) }

// classifyWin labels each window of win samples of pcm (8 kHz).
func classifyWin(pcm []int16, win int) string {
	var b strings.Builder
	for off := 0; off+win <= len(pcm); off += win {
		w := pcm[off : off+win]
		var e float64
		for _, v := range w {
			e += float64(v) * float64(v)
		}
		rms := math.Sqrt(e / float64(win))
		switch {
		case rms < 100:
			b.WriteString(heardSilence)
		case goertzel(w, callerTone) > 0.6:
			b.WriteString(heardCaller)
		case goertzel(w, humanTone) > 0.6:
			b.WriteString(heardHuman)
		default:
			b.WriteString(heardOther)
		}
	}
	return b.String()
}

// musicMatch is the best normalised correlation of the 20 ms envelope of
// pcm (8 kHz, at least 2 s) with the hold music's, over every phase of
// the loop: the music gives 0.8 and more through G.711; speech or a
// tone much less.
func musicMatch(pcm []int16) float64 {
	ref := agentRMS(transfer.Music(8000))
	got := agentRMS(pcm)
	loop := append(append([]float64(nil), ref...), ref...)
	best := -1.0
	for lag := 0; lag < len(ref); lag++ {
		if c := agentNCC(got, loop[lag:], 0); c > best {
			best = c
		}
	}
	return best
}

// ttsPCM renders text as the appliance's TTS engine does (espeak-ng,
// the default voice, 8 kHz).
func ttsPCM(t *testing.T, text string) []int16 {
	t.Helper()
	v, _ := sbspeech.LookupVoice("")
	a, err := sbspeech.NewEspeak("").Synthesize(context.Background(), &sbspeech.Request{Text: text, Voice: v, SampleRate: 8000})
	require.NoError(t, err)
	return a.PCM
}

// transferAgent creates an echo agent without a greeting and a number
// routed to it; it returns the number.
func transferAgent(t *testing.T, d *apptest.Daemon, number string) string {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "transfer " + number, "greeting": ""}, 200)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "transfer " + number,
		"phone_number": number, "agent_id": ag["agent_id"]}, 200)
	return number
}

// transferSteps are the statuses of a call record's transfer steps, in
// order.
func transferSteps(rec map[string]any) []string {
	var out []string
	for _, e := range recordEvents(rec, "transfer") {
		out = append(out, fmt.Sprint(e["text"]))
	}
	return out
}

// recordTransfer is the transfer id of a call record's transfers.
func recordTransfer(t *testing.T, rec map[string]any, id string) map[string]any {
	t.Helper()
	trs, _ := rec["transfers"].([]any)
	for _, x := range trs {
		if m, _ := x.(map[string]any); m["transfer_id"] == id {
			return m
		}
	}
	t.Fatalf("no transfer %s in the record: %v", id, rec["transfers"])
	return nil
}

// switchMS is how long the silence lasted, in what pcm (8 kHz) heard,
// between the end of a run of other audio (music, speech) and the start
// of the first run of to ("A" or "B", ten 20 ms windows at least) after
// it: how quickly a party heard the other once the appliance switched
// its route. -1 when there is no such switch.
func switchMS(pcm []int16, to string) int {
	const win = 160 // 20 ms
	heard := classifyWin(pcm, win)
	start := strings.Index(heard, strings.Repeat(to, 10))
	if start <= 0 {
		return -1
	}
	before := strings.LastIndex(heard[:start], heardOther)
	if before < 0 {
		return -1
	}
	return (start - before - 1) * 20
}

// gapAfterMS is the silence, at 20 ms resolution, between the end of the
// run of other audio (music, speech) that starts at sample from and the
// next other audio: how long a caller put back from the hold music waited
// for the agent. -1 when there is none.
func gapAfterMS(pcm []int16, from int) int {
	const win = 160 // 20 ms
	heard := classifyWin(pcm[from:], win)
	end := len(heard) - len(strings.TrimLeft(heard, heardOther))
	rest := heard[end:]
	next := strings.Index(rest, strings.Repeat(heardOther, 5))
	if next < 0 {
		return -1
	}
	return next * 20
}
