package test

import (
	le "encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// agentWAVs renders, with espeak-ng and sox, what the baresip caller says:
// pre seconds of silence (the greeting plays meanwhile), the utterance,
// then post seconds of silence, as 8 kHz mono S16 (baresip 1.0's aufile
// source). It returns the file and the utterance's own samples.
func agentWAVs(t *testing.T, dir, text string, pre, post float64) (string, []int16) {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox", "baresip"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed", tool)
	}
	raw, utt, out := filepath.Join(dir, "utt-raw.wav"), filepath.Join(dir, "utt.wav"), filepath.Join(dir, "caller.wav")
	b, err := exec.Command("espeak-ng", "-w", raw, text).CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "8000", "-c", "1", "-b", "16", utt).CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", utt, out, "pad", fmt.Sprint(pre), fmt.Sprint(post)).CombinedOutput()
	require.NoError(t, err, "%s", b)
	pcm, rate := agentReadWAV(t, utt)
	require.Equal(t, 8000, rate)
	return out, pcm
}

// agentReadWAV reads a 16-bit mono PCM WAV file.
func agentReadWAV(t *testing.T, path string) ([]int16, int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, len(raw) > 12 && string(raw[:4]) == "RIFF" && string(raw[8:12]) == "WAVE", "%s: not a WAV file", path)
	rate := 0
	for off := 12; off+8 <= len(raw); {
		id, size := string(raw[off:off+4]), int(le.LittleEndian.Uint32(raw[off+4:]))
		body := raw[off+8 : min(off+8+size, len(raw))]
		switch id {
		case "fmt ":
			require.Equal(t, uint16(1), le.LittleEndian.Uint16(body[2:]), "mono")
			require.Equal(t, uint16(16), le.LittleEndian.Uint16(body[14:]), "16 bit")
			rate = int(le.LittleEndian.Uint32(body[4:]))
		case "data":
			pcm := make([]int16, len(body)/2)
			for i := range pcm {
				pcm[i] = int16(le.LittleEndian.Uint16(body[2*i:]))
			}
			return pcm, rate
		}
		off += 8 + size + size%2
	}
	t.Fatalf("%s: no data chunk", path)
	return nil, 0
}

// agentRMS is the RMS of each 20 ms frame (160 samples at 8 kHz).
func agentRMS(pcm []int16) []float64 {
	out := make([]float64, 0, len(pcm)/160)
	for i := 0; i+160 <= len(pcm); i += 160 {
		var s float64
		for _, v := range pcm[i : i+160] {
			s += float64(v) * float64(v)
		}
		out = append(out, math.Sqrt(s/160))
	}
	return out
}

// agentNCC is the normalised cross-correlation of ref against got at lag
// (frames), over ref's length.
func agentNCC(ref, got []float64, lag int) float64 {
	var mr, mg float64
	n := 0
	for i := range ref {
		if j := i + lag; j >= 0 && j < len(got) {
			mr += ref[i]
			mg += got[j]
			n++
		}
	}
	if n < len(ref)/2 {
		return 0
	}
	mr /= float64(n)
	mg /= float64(n)
	var num, dr, dg float64
	for i := range ref {
		if j := i + lag; j >= 0 && j < len(got) {
			a, b := ref[i]-mr, got[j]-mg
			num += a * b
			dr += a * a
			dg += b * b
		}
	}
	if dr == 0 || dg == 0 {
		return 0
	}
	return num / math.Sqrt(dr*dg)
}

// agentBaresipDial runs baresip 1.0 with a throw-away configuration: its
// microphone is the WAV source, what it hears is dumped by the sndfile
// module (dump-*-dec.wav in the returned directory). baresip types -e
// into its menu, hangs up when the WAV source ends, and quits after quit,
// or when stop is called (which waits for it; the test's end calls it).
func agentBaresipDial(t *testing.T, dir, source, uri string, quit time.Duration) (recDir string, output *apptest.SyncBuffer, stop func()) {
	t.Helper()
	b := launchBaresip(t, dir, baresipConf{user: "test", source: source}, uri, quit)
	return b.rec, b.out, b.stop
}

// TestAgentBaresipEchoEngine: baresip calls the demo number (the demo
// agent on the embedded echo engine), stays silent while the greeting
// plays, says one sentence, and records what it hears. The recording
// starts with the greeting (espeak speech within half a second of the
// answer), and the caller's sentence comes back once its turn ended (after
// the engine's 500 ms of silence), recognisable by its energy envelope.
//
// The daemon's fallback decoders run at its own priority
// (speech.stt_fallback_priority: normal): under the default SCHED_IDLE a
// decoder gets no CPU while the rest of the suite keeps both cores busy,
// and the transcript came after the test's 60 s. That the default is
// SCHED_IDLE is speech's TestDecoderLowerPriority.
func TestAgentBaresipEchoEngine(t *testing.T) {
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), map[string]string{"SWITCHBOARD_STT_FALLBACK_PRIORITY": "normal"}))
	dir := t.TempDir()
	const pre, post = 5.5, 5.0
	source, utt := agentWAVs(t, dir, "Testing one, two, three.", pre, post)
	rec, out, stopBaresip := agentBaresipDial(t, dir, source, "sip:+18005550100@"+d.App.SIPAddr().String(), 20*time.Second)
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 1 }, 10*time.Second, 20*time.Millisecond, "no call: %s", out.String())
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 20*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", out.String())
	var decs []string
	require.Eventually(t, func() bool {
		decs, _ = filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
		return len(decs) == 1
	}, 5*time.Second, 50*time.Millisecond, "no recording: %s", out.String())
	stopBaresip() // its dumps are whole once it exited
	heard, rate := agentReadWAV(t, decs[0])
	require.Equal(t, 8000, rate)
	env := agentRMS(heard)
	uttEnv := agentRMS(utt)

	// What the pacer sends when nothing plays is digital silence (RMS 0);
	// espeak speech through G.711 has frame RMS in the hundreds to
	// thousands. 100 (-50 dBFS) separates them with a wide margin.
	const active = 100.0
	first := -1
	for i, v := range env {
		if v > active {
			first = i
			break
		}
	}
	require.GreaterOrEqual(t, first, 0, "baresip heard nothing")
	greetStart := time.Duration(first) * 20 * time.Millisecond
	// The greeting: speech from the start, mostly active for 3 s.
	act := 0
	for _, v := range env[first:min(first+150, len(env))] {
		if v > active {
			act++
		}
	}
	// The echo: the utterance's envelope, found again after it was said.
	uttStart := int(pre * 50)
	uttFrames := len(uttEnv)
	bestLag, best := 0, -1.0
	// baresip's recording and its playback do not start at the same
	// instant, so the search starts a second before the utterance ends.
	for lag := uttFrames - 50; lag <= uttFrames+200; lag++ {
		if c := agentNCC(uttEnv, env, uttStart+lag); c > best {
			bestLag, best = lag, c
		}
	}
	echoDelay := time.Duration(bestLag-uttFrames) * 20 * time.Millisecond
	t.Logf("baresip heard %.1f s: greeting from %v (%d%% of its first 3 s active); utterance %.2f s, echoed %v after it ended, envelope correlation %.3f",
		float64(len(heard))/8000, greetStart, act*100/150, float64(len(utt))/8000, echoDelay, best)
	require.Less(t, greetStart, 500*time.Millisecond, "the greeting comes first, right after the answer")
	require.Greater(t, act, 100, "the greeting is speech")
	// Nothing but the greeting before the caller spoke: the greeting
	// ends before the utterance starts (the caller waited for it).
	silentBeforeUtt := 0
	for _, v := range env[min(uttStart-25, len(env)):min(uttStart, len(env))] {
		if v <= active {
			silentBeforeUtt++
		}
	}
	require.Equal(t, 25, silentBeforeUtt, "the greeting was still playing when the caller spoke; lengthen pre")
	require.Greater(t, best, 0.8, "the caller's sentence did not come back")
	require.Greater(t, echoDelay, -time.Second, "echoed before the turn ended")
	require.Less(t, echoDelay, 3*time.Second)

	// The echo engine gives no transcript of the caller: the local STT
	// (pocketsphinx, the default engine, no account) wrote the caller's
	// turn in the call record. Through G.711 its words are mostly wrong
	// (docs/realtime.md: word error rate 0.94 by phone), so only the line is checked.
	// The decoder takes a third of the turn's length on a free core; the
	// bound leaves room for a suite that keeps both cores busy.
	var user []string
	require.Eventually(t, func() bool {
		list := d.JSON(t, "GET", "/v1/calls", d.OwnerKey, nil, 200)
		calls, _ := list["calls"].([]any)
		user = user[:0]
		for _, c := range calls {
			rec, _ := c.(map[string]any)
			lines, _ := rec["transcript"].([]any)
			for _, l := range lines {
				if m, _ := l.(map[string]any); m["role"] == "user" && m["text"] != "" {
					user = append(user, m["text"].(string))
				}
			}
		}
		return len(user) > 0
	}, 30*time.Second, 100*time.Millisecond, "no transcript of the caller's turn in the call record")
	t.Logf("the caller's turn in the record (local STT): %q", user)
}
