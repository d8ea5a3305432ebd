package test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/call"
)

// TestTransferHoldResume: a baresip caller speaks in bursts (its tone)
// and the echo agent answers each with the caller's own audio. On hold
// the caller hears the hold music and the model hears nothing (no burst
// is answered, during the hold or after it); on resume the answers come
// back. The record notes the hold and the resume.
func TestTransferHoldResume(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557307")
	dir := t.TempDir()
	var parts [][]int16
	parts = append(parts, silencePCM(time.Second))
	for i := 0; i < 10; i++ {
		parts = append(parts, tonePCM(callerTone, 0.8), silencePCM(1700*time.Millisecond))
	}
	src := writeWAV(t, dir, "caller.wav", parts...)
	caller := startBaresip(t, "caller", src, "sip:"+number+"@"+d.App.SIPAddr().String(), 60*time.Second)
	c := liveCall(t, d, caller.out.String)
	path := "/v1/calls/" + c.ID()

	callerSpoke(t, c, 6*time.Second) // two answered bursts
	d.JSON(t, "POST", path+"/hold", d.OwnerKey, map[string]any{"audio": "music"}, 200)
	callerSpoke(t, c, 7*time.Second) // bursts nobody answers
	d.JSON(t, "POST", path+"/resume", d.OwnerKey, map[string]any{}, 200)
	d.JSON(t, "POST", path+"/resume", d.OwnerKey, map[string]any{}, 409)
	requireNoCalls(t, d) // the caller hangs up when its file ends

	ms := c.Snapshot().Media
	t.Logf("caller's RTP: %d in, %d out, %d late (a starved machine skips frames it is too late to send)", ms.PacketsIn, ms.PacketsOut, ms.Late)
	pcm := caller.heard(t)
	heard := classify(pcm)
	t.Logf("caller heard: %s", heard)
	music := strings.Index(heard, strings.Repeat(heardOther, 30))
	require.Greater(t, music, 0, "no hold music")
	end := music + len(heard[music:]) - len(strings.TrimLeft(heard[music:], heardOther))
	m := musicMatch(pcm[music*800 : end*800])
	t.Logf("hold audio vs the hold music: %.2f over %d ms", m, (end-music)*100)
	require.Greater(t, m, 0.75, "the held caller does not hear the hold music")
	require.GreaterOrEqual(t, end-music, 55, "the hold lasted about 7 s")
	require.Contains(t, heard[:music], strings.Repeat(heardCaller, 5), "the agent answered before the hold")
	require.Contains(t, heard[end:], strings.Repeat(heardCaller, 5), "the agent answers again after the resume")
	// What came right after the resume is a burst spoken after it: the
	// bursts of the hold were never heard by the model. The first answer
	// after the resume comes after the next burst ends (up to 2.5 s).
	first := strings.Index(heard[end:], heardCaller)
	t.Logf("first answer %d ms after the music stopped", first*100)
	require.Greater(t, first, 5, "an answer right at the resume: the model heard the held caller")

	rec := d.JSON(t, "GET", path, d.OwnerKey, nil, 200)
	var notes []string
	for _, e := range recordEvents(rec, "event") {
		if s, _ := e["text"].(string); s == "hold" || s == "resume" {
			notes = append(notes, s)
		}
	}
	require.Equal(t, []string{"hold", "resume"}, notes)
}

// callerSpoke waits until the call took d more of the caller's audio
// (its inbound frames, 20 ms each: the caller's file plays at the call's
// pace, not the test's).
func callerSpoke(t *testing.T, c *call.Call, d time.Duration) {
	t.Helper()
	in := c.Leg().Stats().PacketsIn
	n := uint64(d / (20 * time.Millisecond))
	require.Eventually(t, func() bool { return c.Leg().Stats().PacketsIn >= in+n }, d+20*time.Second, 10*time.Millisecond,
		"the caller's audio stopped coming")
}
