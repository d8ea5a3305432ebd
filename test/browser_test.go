package test

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// fakeMicWAV renders a sentence with espeak-ng for chromium's fake
// microphone (48 kHz mono 16-bit, which chromium loops): 0.5 s of silence,
// the speech, then silence long enough for the echo to play out before the
// file loops. It returns the file and the speech at 8 kHz.
func fakeMicWAV(t *testing.T, dir, text string) (string, []int16) {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s must be installed (make deps)", tool)
	}
	raw, out, ref := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "mic.wav"), filepath.Join(dir, "ref.wav")
	b, err := exec.Command("espeak-ng", "-w", raw, text).CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "48000", "-c", "1", "-b", "16", out, "pad", "0.5", "12").CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "8000", "-c", "1", "-b", "16", ref).CombinedOutput()
	require.NoError(t, err, "%s", b)
	pcm, _, err := readWAV(ref)
	require.NoError(t, err)
	return out, pcm
}

// TestChromiumCallsTheDemoAgent: Debian's chromium, with a fake
// microphone playing espeak-ng speech, calls the demo agent from a page on
// another origin (CORS, preflight included) the way the Agents SDK's
// WebRTC transport does, and hears its own speech come back from the echo
// engine (recorded in the page through WebAudio).
func TestChromiumCallsTheDemoAgent(t *testing.T) {
	requireBrowser(t)
	d := webrtcDaemon(t)
	agentID := demoAgentID(t, d)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>another origin</title><p>calling</p>"))
	}))
	defer page.Close()
	wav, said := fakeMicWAV(t, t.TempDir(), "Hello switchboard. This is chromium calling the echo line. One, two, three.")
	var res struct {
		Status          int      `json:"status"`
		Body            string   `json:"body"`
		Location        string   `json:"location"`
		Events          []string `json:"events"`
		Samples         []int16  `json:"samples"`
		Rate            int      `json:"rate"`
		Codec           string   `json:"codec"`
		PacketsReceived int      `json:"packetsReceived"`
		PacketsSent     int      `json:"packetsSent"`
		RTT             float64  `json:"rtt"`
		State           string   `json:"state"`
	}
	runBrowser(t, map[string]any{"kind": "call", "page": page.URL, "url": d.URL, "token": d.OwnerKey,
		"query": "?agent_id=" + agentID, "wav": wav, "seconds": 16}, 90*time.Second, &res)
	require.Equal(t, http.StatusCreated, res.Status, res.Body)
	require.Regexp(t, callLocation, res.Location)
	require.Equal(t, "connected", res.State)
	require.Equal(t, "audio/opus", res.Codec)
	require.Contains(t, res.Events, "session.created")
	require.Contains(t, res.Events, "input_audio_buffer.speech_started")
	t.Logf("chromium: %d packets sent, %d received, rtt %.1f ms, heard %.1f s, events %v",
		res.PacketsSent, res.PacketsReceived, res.RTT*1000, float64(len(res.Samples))/float64(res.Rate), res.Events)

	require.Equal(t, 48000, res.Rate)
	rs, err := media.NewResampler(48000, 8000)
	require.NoError(t, err)
	heard := rs.Process(nil, res.Samples)
	windows, matched, median := echoWindows(said, heard, 0, 14*8000, 0.7)
	rev := make([]int16, len(said))
	for i, v := range said {
		rev[len(said)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 14*8000, 0.7)
	t.Logf("chromium heard its speech back: %d/%d windows matched (median lag %d ms); reversed control %d/%d",
		matched, windows, median/8, ctlMatched, ctlWindows)
	require.GreaterOrEqual(t, float64(matched), 0.5*float64(windows), "chromium hears its own speech back")
	require.LessOrEqual(t, float64(ctlMatched), 0.2*float64(ctlWindows), "reversed speech must not match")

	callID := res.Location[strings.LastIndex(res.Location, "/")+1:]
	require.Eventually(t, func() bool {
		st, _, raw := d.Do(t, "GET", "/v1/calls/"+callID, d.OwnerKey, nil)
		return st == 200 && strings.Contains(string(raw), `"state":"ended"`) && strings.Contains(string(raw), `"channel":"webrtc"`)
	}, 15*time.Second, 100*time.Millisecond, "the browser call ends and is recorded")
}
