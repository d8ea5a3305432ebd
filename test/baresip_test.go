package test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/sipleg"
)

// paddedSpeechWAV synthesises an English sentence with espeak-ng and converts it
// with sox to what baresip 1.0's aufile source requires (8 kHz mono S16),
// with 0.5 s of silence before and 2.5 s after.
func paddedSpeechWAV(t *testing.T, dir string) string {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (apt install espeak-ng sox)", tool)
	}
	raw, out := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	b, err := exec.Command("espeak-ng", "-w", raw, "Hello switchboard. This is a test of the echo line. One, two, three, four, five.").CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "8000", "-c", "1", "-b", "16", out, "pad", "0.5", "2.5").CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// TestBaresipEcho: baresip calls the demo number, plays a speech WAV as
// its microphone and records what it hears (sndfile module); the recording
// must hold the caller's speech again, about 500 ms later.
func TestBaresipEcho(t *testing.T) {
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	d := callDaemon(t, nil)
	dir := t.TempDir()
	speech := paddedSpeechWAV(t, dir)
	// baresip 1.0 types -e into its menu and hangs up when the aufile
	// source reaches the end of the WAV; it then idles until -t or a
	// signal.
	b := launchBaresip(t, dir, baresipConf{source: speech}, "sip:14155550150@"+d.App.SIPAddr().String(), 45*time.Second)
	buf, rec, stopBaresip := b.out, b.rec, b.stop
	c := liveCall(t, d, func() string { return tail(buf.String(), 3000) })
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 40*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", tail(buf.String(), 3000))
	// baresip's recording of the call is whole once it exited.
	stopBaresip()
	requireNoCalls(t, d)
	snap := c.Snapshot()
	require.Equal(t, call.EndedByCaller, snap.EndedBy, "baresip hung up at the end of its WAV")
	require.Equal(t, "PCMU", c.Leg().(*sipleg.Leg).SIP().Offer().Codec.Name)

	// sndfile dumps what baresip sent (-enc) and what it heard (-dec).
	decs, err := filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
	require.NoError(t, err)
	require.Len(t, decs, 1, "baresip's recording of the call: %s", tail(buf.String(), 3000))
	heard, rate, err := readWAV(decs[0])
	require.NoError(t, err)
	require.Equal(t, 8000, rate)
	said, _, err := readWAV(speech)
	require.NoError(t, err)
	lag, envCorr, waveCorr := echoMatch(said, heard, 0, 2*8000)
	windows, matched, median := echoWindows(said, heard, 0, 2*8000, 0.7)
	t.Logf("baresip heard %.1f s; whole-call lag %v (envelope correlation %.3f, waveform %.3f); %d/%d speech windows matched, median lag %v; stats %+v",
		float64(len(heard))/8000, time.Duration(lag)*time.Second/8000, envCorr, waveCorr, matched, windows, time.Duration(median)*time.Second/8000, snap.Media)
	// Control: the same search with the speech reversed in time (same
	// spectrum and level, different sequence) must not match.
	rev := make([]int16, len(said))
	for i, v := range said {
		rev[len(said)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 2*8000, 0.7)
	t.Logf("control (reversed speech): %d/%d windows matched", ctlMatched, ctlWindows)
	requireEcho(t, 12, windows, matched, median, ctlWindows, ctlMatched)
}

// requireEcho checks an echoWindows result and its reversed-speech control.
// Measured here: on an idle machine 90-100% of the speech windows match
// (waveform correlation 0.95-0.99: G.711 and two resamplers barely change
// the waveform) at 0.58-0.62 s; with two busy loops competing for the two
// cores, resyncs in the call spoil a global alignment (whole-call
// correlation down to 0.33) and 60-90% of the windows still match;
// reversed speech matched no window in any run. Half the windows, and at
// most a fifth for the control, separate the two with a wide margin.
func requireEcho(t *testing.T, minWindows, windows, matched, median, ctlWindows, ctlMatched int) {
	t.Helper()
	require.GreaterOrEqual(t, windows, minWindows, "speech windows in the reference")
	require.GreaterOrEqual(t, float64(matched), 0.5*float64(windows), "speech windows heard back")
	require.InDelta(t, 0.65, float64(median)/8000, 0.35, "echo delay (s)")
	require.LessOrEqual(t, float64(ctlMatched), 0.2*float64(ctlWindows), "reversed speech must not match")
}
