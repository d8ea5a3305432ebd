package test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/call"
)

// TestTransferWarmBaresip: baresip calls an agent and plays a tone; a
// warm transfer (accept on answer) calls a second baresip (the human, who
// says hello, listens, then plays a tone of its own). The caller hears
// the hold music while the human is called and briefed; the human hears
// the briefing, then the caller's tone; the caller hears the human's
// tone; the human hanging up ends the call. The record lists the
// transfer's steps; no call, port or leg is left.
func TestTransferWarmBaresip(t *testing.T) {
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557301")
	dir := t.TempDir()
	// The human: "hello" half a second after answering (the machine
	// detector hears a person), quiet during the briefing (a tone there
	// would be a voicemail's beep to the detector), then a tone; baresip
	// hangs up when the file ends.
	hello := ttsPCM(t, "Hello?")
	humanWAV := writeWAV(t, dir, "human.wav", silencePCM(500*time.Millisecond), hello, silencePCM(8*time.Second), tonePCM(humanTone, 6))
	human := startBaresip(t, "human", humanWAV, "", 60*time.Second)
	callerWAV := writeWAV(t, dir, "caller.wav", silencePCM(2*time.Second), tonePCM(callerTone, 40))
	caller := startBaresip(t, "caller", callerWAV, "sip:"+number+"@"+d.App.SIPAddr().String(), 60*time.Second)
	c := liveCall(t, d, caller.out.String)

	const briefing = "A caller needs help with an invoice from last month. They have the invoice number ready."
	res := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{
		"target_uri": human.uri, "mode": "warm", "accept": "answer", "briefing": briefing, "timeout_s": 20}, 202)
	id, _ := res["transfer_id"].(string)
	require.True(t, strings.HasPrefix(id, "tr_"), "transfer id: %v", res)
	// A second transfer while this one runs is refused.
	status, _, raw := d.Do(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{"target_uri": human.uri})
	require.Equal(t, 409, status, "%s", raw)

	rec := waitRecord(t, d, c.ID(), 30*time.Second, func(r map[string]any) bool {
		s := transferSteps(r)
		return len(s) > 0 && s[len(s)-1] == "bridged"
	})
	t.Logf("steps: %v", transferSteps(rec))
	require.Equal(t, []string{"dialing", "answered", "briefing", "bridged"}, withoutRinging(transferSteps(rec)))
	tr := recordTransfer(t, rec, id)
	require.Equal(t, "bridged", tr["outcome"])
	require.Equal(t, "warm", tr["mode"])
	require.Equal(t, "api", tr["by"])
	require.Greater(t, tr["duration_ms"].(float64), 0.0)
	// The human hangs up at the end of its file: the call ends.
	requireNoCalls(t, d)
	snap := c.Snapshot()
	require.Equal(t, call.EndedByAppliance, snap.EndedBy)
	require.Contains(t, snap.EndReason, "transfer target hung up")
	require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")

	callerHeard, humanHeard := classify(caller.heard(t)), classify(human.heard(t))
	t.Logf("caller heard: %s", callerHeard)
	t.Logf("human heard:  %s", humanHeard)
	// The caller: the hold music (no silence, none of either tone), then
	// the human's tone once bridged.
	b := strings.Index(callerHeard, strings.Repeat(heardHuman, 10))
	require.Greater(t, b, 0, "the caller never heard the human's tone")
	hold := strings.Trim(callerHeard[:b], heardSilence)
	require.Greater(t, len(hold), 30, "the caller heard no hold audio")
	require.NotContains(t, hold, heardCaller)
	require.NotContains(t, hold, heardHuman, "the caller heard the human before the human accepted")
	pcm := caller.heard(t)
	start := strings.Index(callerHeard, heardOther)
	end := start + len(callerHeard[start:]) - len(strings.TrimLeft(callerHeard[start:], heardOther))
	require.GreaterOrEqual(t, end-start, 20, "the hold music lasted less than 2 s")
	m := musicMatch(pcm[start*800 : end*800])
	t.Logf("hold audio vs the hold music: %.2f", m)
	require.Greater(t, m, 0.75, "the caller's hold audio is not the hold music")
	// The human: the briefing (speech), then the caller's tone.
	a := strings.Index(humanHeard, strings.Repeat(heardCaller, 10))
	require.Greater(t, a, 0, "the human never heard the caller's tone")
	said := strings.Count(humanHeard[:a], heardOther)
	ref := len(ttsPCM(t, briefing)) / 800
	require.Greater(t, said, ref/2, "the human heard no briefing before the caller")
	// How quickly the human heard the caller once connected (accept:
	// answer, at the end of the briefing; the caller's tone never stops):
	// the silence between the briefing and the caller's tone. Both
	// routes switch in the same step.
	humanGap := switchMS(human.heard(t), heardCaller)
	t.Logf("accept to two-way audio: the human heard the caller %d ms after the briefing ended", humanGap)
	require.GreaterOrEqual(t, humanGap, 0)
	require.Less(t, humanGap, 1000, "the human waited for the caller after the briefing")
}

// withoutRinging drops the ringing steps (a peer may or may not send
// 180 before its 200).
func withoutRinging(steps []string) []string {
	var out []string
	for _, s := range steps {
		if s != "ringing" {
			out = append(out, s)
		}
	}
	return out
}
