package test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
	"switchboard/media/wav"
)

// TestRecordingRedactsKeys: a caller speaks, presses keys as in-band
// tones, speaks again. Under the redact policy the recording's caller
// channel has the speech but no tone a DTMF detector can find; under the
// model policy (the control) the same call's recording has the keys.
func TestRecordingRedactsKeys(t *testing.T) {
	t.Parallel()
	sp := speech(t)
	const on, off = 100 * time.Millisecond, 100 * time.Millisecond
	var m mix
	m.speech(sp, 0, time.Second, 0, true)
	m.silence(200 * time.Millisecond)
	m.generated(t, "42#", -10, on, off)
	m.silence(200 * time.Millisecond)
	m.speech(sp, time.Second, time.Second, 0, true)
	m.silence(500 * time.Millisecond)
	pcm := m.noise(-55, 1)

	for _, tc := range []struct {
		mode string
		keys string // what a detector finds in the recording's left channel
	}{{"redact", ""}, {"model", "42#"}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			e := newDTMFEnv(t)
			p := e.dial(t, e.number(t, map[string]any{"dtmf": map[string]any{"mode": tc.mode}, "recording": map[string]any{"enabled": true}}),
				callerOptions{NoEvents: true})
			c := e.accept(t)
			live := e.liveCall(t)
			p.play(pcm)
			ctx := ctxFor(t, 15*time.Second)
			require.NotEmpty(t, userText(t, ctx, c), "the keys reached the keypad")
			// The caller's audio plays out over RTP, then through the appliance's jitter buffer.
			p.playedOut(t, live, 15)
			require.NoError(t, p.oc.Hangup(ctx, "done"))
			require.Eventually(t, func() bool { return e.d.App.Calls().Active() == 0 }, 5*time.Second, 10*time.Millisecond)

			var raw []byte
			require.Eventually(t, func() bool {
				var st int
				st, _, raw = e.d.Do(t, "GET", "/v1/calls/"+live.ID()+"/recording", e.d.OwnerKey, nil)
				return st == http.StatusOK
			}, 5*time.Second, 50*time.Millisecond)
			a, err := wav.Decode(bytes.NewReader(raw))
			require.NoError(t, err)
			left := stereoChannel(a, 0)
			det := dtmf.NewDetector(dtmf.DetectorOptions{})
			var evs []dtmf.Event
			start := time.Now()
			for i := 0; i+160 <= len(left); i += 160 {
				evs = det.Process(evs, left[i:i+160], start.Add(time.Duration(i)*time.Second/8000))
			}
			env := agentRMS(left)
			voiced := 0
			for _, v := range env {
				if v > 300 {
					voiced++
				}
			}
			t.Logf("%s: recording %.1f s, caller voiced %d frames, detector found %q", tc.mode, float64(a.Frames())/8000, voiced, digitString(evs))
			require.Equal(t, tc.keys, digitString(evs))
			require.Greater(t, voiced, 50, "the caller's speech is in the recording")
		})
	}
}
