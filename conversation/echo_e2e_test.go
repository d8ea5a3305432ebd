package conversation_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media"
)

// TestEchoAgentEndToEnd: a PCMU caller of an agent on the echo engine (a
// real SIP call over loopback, the appliance's own engine) hears its turn
// come back sample for sample, since the engine speaks the caller's G.711
// and nothing is resampled or coded again on the way; speaking again while
// the answer plays stops it within a few frames (barge-in).
func TestEchoAgentEndToEnd(t *testing.T) {
	t.Parallel()
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), nil))
	number := routeAgent(t, d, map[string]any{"engine": "echo"})
	c, err := dial(t, d, number, callOptions{})
	require.NoError(t, err)

	// A 3 s tone, then silence: one turn, echoed once 500 ms of silence
	// ended it.
	tone := callerTone(3 * time.Second)
	said := media.PCMU.DecodeFrame(nil, media.PCMU.EncodeFrame(nil, tone)) // what the caller's codes decode to
	c.say(tone)
	sent := time.Now().Add(3 * time.Second)
	first := c.waitHeard(sent, 15*time.Second) // from now: the padding is silent, this is the tone
	t.Logf("the echo started %v after the caller stopped", first.at.Sub(sent).Round(time.Millisecond))

	// Barge in two seconds into the answer (of 3.3 s: the 300 ms of
	// padding before the tone, and the tone).
	c.hear(first.at.Add(-time.Millisecond), 100, 5*time.Second)
	barge := time.Now()
	c.say(callerTone(2 * time.Second))
	c.waitPast(barge.Add(1900*time.Millisecond), 5*time.Second)
	// From 500 ms after the barge-in (the caller's packetization, the
	// jitter buffer, 30 ms of speech for the VAD, slack for a loaded
	// machine) until the caller stops again, the caller hears nothing.
	heard := c.heardMs(barge.Add(500*time.Millisecond), barge.Add(1900*time.Millisecond))
	t.Logf("heard %d ms of the answer in the 1.4 s after the barge-in's first 500 ms", heard)
	require.Zero(t, heard, "the answer went on after the caller barged in")

	// What was heard of the answer before the barge-in is the caller's own
	// audio, sample for sample: a 200 ms stretch of the tone's second
	// second is in it (one, not all: a frame the jitter buffer concealed
	// on a loaded machine is not the caller's).
	c.mu.Lock()
	got := append([]int16(nil), c.pcm...)
	c.mu.Unlock()
	found := false
	for at := 8000; at+1600 <= 16000 && !found; at += 800 {
		want := said[at : at+1600]
		for i := 0; i+len(want) <= len(got) && !found; i++ {
			found = got[i] == want[0] && slices.Equal(got[i:i+len(want)], want)
		}
	}
	require.True(t, found, "the caller's turn did not come back sample for sample")
}
