package test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/dtmf"
	"switchboard/media/wav"
	"switchboard/sip"
	"switchboard/sipleg"
)

// The bridged part of a transfer (issue 23 item 1), with real peers on
// both legs: keys pass between the legs, the caller's hold on their phone
// is honoured, the recording and the media counters go on, and nothing
// is left once the call ends.

// bridgeTo starts a bridge transfer of c to uri and waits until the
// record says bridged; it returns the record then.
func bridgeTo(t *testing.T, d *apptest.Daemon, callID, uri string, extra map[string]any) map[string]any {
	t.Helper()
	body := map[string]any{"target_uri": uri, "mode": "bridge", "timeout_s": 15}
	for k, v := range extra {
		body[k] = v
	}
	d.JSON(t, "POST", "/v1/calls/"+callID+"/transfer", d.OwnerKey, body, 202)
	return waitRecord(t, d, callID, 20*time.Second, func(r map[string]any) bool {
		s := transferSteps(r)
		return len(s) > 0 && s[len(s)-1] == "bridged"
	})
}

// baresipDTMF are the keys baresip 1.0 reported receiving, in order
// (it says "received event: '5' (end=0)" at a key's start).
func baresipDTMF(out string) string {
	const said = "received event: '"
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, said); i >= 0 && strings.HasPrefix(l[i+len(said)+1:], "' (end=0)") {
			b.WriteByte(l[i+len(said)])
		}
	}
	return b.String()
}

// TestTransferBridgeDTMF: once bridged, a key the caller presses reaches
// the human's phone, and the human's key reaches the caller's phone. The
// caller is sipp (an RFC 4733 event from sip-tester's capture, then a SIP
// INFO), the human baresip, which reports what it received; then the
// other way round (sipp as the human presses 3, baresip calls). The model
// hears none of these keys, even when it keeps listening.
func TestTransferBridgeDTMF(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557321")
	for _, listening := range []bool{false, true} {
		t.Run(fmt.Sprintf("caller to human, keep_listening %v", listening), func(t *testing.T) {
			requireNoCalls(t, d)
			dir := t.TempDir()
			human := startBaresip(t, "human", writeWAV(t, dir, "human.wav", silencePCM(30*time.Second)), "", 40*time.Second)
			steps := []step{{Pause: 3500}, {Pcap: filepath.Join(sippPcaps, "dtmf_2833_5.pcap"), Pause: 1000},
				{InfoType: dtmf.ContentTypeDTMFRelay, InfoBody: "Signal=7\nDuration=160\n", Pause: 1500}}
			done := make(chan sippResult, 1)
			go func() {
				done <- runSipp(t, d.App.SIPAddr(), sippScenario(t, "call", scenarioData{PT: 101, Steps: steps}), number)
			}()
			c := liveCall(t, d)
			bridgeTo(t, d, c.ID(), human.uri, map[string]any{"keep_listening": listening})
			(<-done).requireOK(t)
			requireNoCalls(t, d)
			require.Eventually(t, func() bool { return baresipDTMF(human.out.String()) == "57" }, 5*time.Second, 20*time.Millisecond,
				"the human's phone did not receive 5 and 7: %q\n%s", baresipDTMF(human.out.String()), tail(human.out.String(), 3000))
			rec := d.JSON(t, "GET", "/v1/calls/"+c.ID(), d.OwnerKey, nil, 200)
			require.Empty(t, recordEvents(rec, "dtmf"), "the model heard the caller's keys")
			require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")
		})
	}
	t.Run("human to caller", func(t *testing.T) {
		requireNoCalls(t, d)
		voice, _ := calleePcap(t, tonePCM(humanTone, 2))
		uri, sipp := startHuman(t, human{Name: "keys", RingMs: 100, Key: "3", KeyAfterMs: 2500, Voice: voice})
		dumpOnFail(t, d, sipp)
		dir := t.TempDir()
		caller := startBaresip(t, "caller", writeWAV(t, dir, "caller.wav", silencePCM(9*time.Second)),
			"sip:"+number+"@"+d.App.SIPAddr().String(), 30*time.Second)
		c := liveCall(t, d, caller.out.String)
		bridgeTo(t, d, c.ID(), uri, nil)
		requireNoCalls(t, d) // the caller hangs up when its file ends; the human's leg follows
		sipp.wait(t, 10*time.Second)
		require.Equal(t, "3", baresipDTMF(caller.out.String()), "the caller's phone did not receive the human's 3: %s",
			tail(caller.out.String(), 3000))
		require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")
	})
}

// TestTransferBridgeCallerHold: a sipp caller, bridged to a baresip
// human, puts the call on hold from its phone (re-INVITE a=sendonly) and
// resumes it (a=sendrecv). The hold is answered recvonly and the
// appliance sends the caller nothing while it lasts; the human hears the
// hold music instead of the caller's line (as a B2BUA such as Asterisk
// plays its music on hold to the other party), then the caller again
// after the resume, who hears the human again.
func TestTransferBridgeCallerHold(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557322")
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range strings.Split(d.Logs.String(), "\n") {
				if strings.Contains(l, "route") || strings.Contains(l, "hold") || strings.Contains(l, "media updated") || strings.Contains(l, "latched") || strings.Contains(l, "call ended") {
					t.Log(l)
				}
			}
		}
	})
	dir := t.TempDir()
	human := startBaresip(t, "human", writeWAV(t, dir, "human.wav", tonePCM(humanTone, 40)), "", 50*time.Second)
	peer := newRTPPeer(t) // the caller's RTP address in its offer: what the appliance sends the caller
	tone, _ := calleePcap(t, tonePCM(callerTone, 20))
	s := scenario{Name: "bridge-hold", Port: fmt.Sprint(peer.port()), Formats: "0 101", WantPT: 0, Ptime: 20, Status: 200,
		Rtpmaps: "      a=rtpmap:0 PCMU/8000\n      a=rtpmap:101 telephone-event/8000\n      a=fmtp:101 0-16\n",
		Play:    tone, PauseMs: 5000, HoldMs: 4000}
	done := make(chan sippResult, 1)
	go func() { done <- runSipp(t, d.App.SIPAddr(), render(t, "call.xml.tmpl", s), number) }()
	c := liveCall(t, d)
	bridgeTo(t, d, c.ID(), human.uri, nil)

	dir2 := func() sip.Direction { return c.Leg().(*sipleg.Leg).SIP().Media().Direction }
	require.Eventually(t, func() bool { return dir2() == sip.SendOnly }, 10*time.Second, 5*time.Millisecond, "no hold")
	held := time.Now()
	require.Eventually(t, func() bool { return dir2() != sip.SendOnly }, 20*time.Second, 5*time.Millisecond, "no resume")
	resumed := time.Now()
	require.Equal(t, sip.SendRecv, dir2())
	(<-done).requireOK(t) // the 200s to the re-INVITEs said recvonly, then sendrecv
	requireNoCalls(t, d)
	require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")

	// The caller's side: the human's tone before the hold, nothing during
	// it (a frame in flight at the switch aside), the human again after.
	var before, after []int16
	var sentDuring int
	for _, p := range peer.received() {
		switch {
		case p.at.Before(held):
			before = append(before, p.pcm...)
		case p.at.After(held.Add(200*time.Millisecond)) && p.at.Before(resumed.Add(-100*time.Millisecond)):
			// The pacer pauses right after the update (as testHold), and
			// sends again as soon as the resume is applied, which this
			// loop sees a little later.
			t.Logf("sent %d ms into the hold", p.at.Sub(held).Milliseconds())
			sentDuring++
		case p.at.After(resumed.Add(200 * time.Millisecond)):
			after = append(after, p.pcm...)
		}
	}
	t.Logf("hold %.1f s: the appliance sent the caller %d packets during it, %.1f s of audio before, %.1f s after",
		resumed.Sub(held).Seconds(), sentDuring, float64(len(before))/8000, float64(len(after))/8000)
	require.Zero(t, sentDuring, "RTP sent to the caller while its phone held the call")
	require.Contains(t, classify(before), strings.Repeat(heardHuman, 10), "the caller did not hear the human before the hold")
	require.Contains(t, classify(after), strings.Repeat(heardHuman, 10), "the caller did not hear the human after the resume")

	// The human's side: the caller's tone, the hold music, the caller.
	pcm := human.heard(t)
	heard := classify(pcm)
	t.Logf("human heard: %s", heard)
	a := strings.Index(heard, strings.Repeat(heardCaller, 10))
	require.GreaterOrEqual(t, a, 0, "the human never heard the caller")
	music := strings.Index(heard[a:], strings.Repeat(heardOther, 20))
	require.Greater(t, music, 0, "the human heard no hold music while the caller held: %s", heard)
	music += a
	end := music + len(heard[music:]) - len(strings.TrimLeft(heard[music:], heardOther))
	m := musicMatch(pcm[(music+1)*800 : (end-1)*800]) // the switches' windows aside
	t.Logf("the human's hold audio: %.1f s, vs the hold music %.2f", float64(end-music)/10, m)
	require.Greater(t, m, 0.75, "what the human heard during the hold is not the hold music")
	// baresip's dump loses audio on a loaded machine: the music lasted
	// the hold, give or take.
	require.GreaterOrEqual(t, float64(end-music)/10, resumed.Sub(held).Seconds()/2, "the music stopped early")
	require.LessOrEqual(t, float64(end-music)/10, resumed.Sub(held).Seconds()+1, "the music outlasted the hold")
	require.NotContains(t, heard[music:end], heardCaller, "the human heard the held caller's line")
	require.Contains(t, heard[end:], strings.Repeat(heardCaller, 10), "the human did not hear the caller after the resume")
}

// TestTransferBridgeRecording: a recorded call is bridged to a baresip
// human. The recording goes on over the bridge (the caller's channel
// carries the caller's tone, the other channel the greeting, then the
// human's tone); the caller's media counters keep counting during the
// bridge; the record keeps the transcript until the bridge and lists
// the human's leg with its SIP details.
func TestTransferBridgeRecording(t *testing.T) {
	d := callDaemon(t, nil)
	const number = "+14155557323"
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "recorded transfer", "greeting": "Hello, this call is recorded.",
		"recording": map[string]any{"enabled": true}}, 200)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "rec transfer", "phone_number": number,
		"agent_id": ag["agent_id"]}, 200)
	dir := t.TempDir()
	human := startBaresip(t, "human", writeWAV(t, dir, "human.wav", tonePCM(humanTone, 40)), "", 50*time.Second)
	caller := startBaresip(t, "caller", writeWAV(t, dir, "caller.wav", silencePCM(3*time.Second), tonePCM(callerTone, 10)),
		"sip:"+number+"@"+d.App.SIPAddr().String(), 30*time.Second)
	c := liveCall(t, d, caller.out.String)
	pre := waitRecord(t, d, c.ID(), 10*time.Second, func(r map[string]any) bool {
		return strings.Contains(fmt.Sprint(r["transcript"]), "this call is recorded")
	})
	require.Eventually(t, func() bool { return c.Pending() == 0 }, 10*time.Second, 10*time.Millisecond, "the greeting did not play out")
	bridgeTo(t, d, c.ID(), human.uri, nil)
	bridged, atBridge := time.Now(), c.Snapshot().Media
	requireNoCalls(t, d) // the caller hangs up when its file ends
	require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")
	snap := c.Snapshot()
	span := snap.Ended.Sub(bridged)
	in, out := snap.Media.PacketsIn-atBridge.PacketsIn, snap.Media.PacketsOut-atBridge.PacketsOut
	t.Logf("bridged for %.1f s: the caller's leg %d packets in, %d out meanwhile (%d lost, %d late)", span.Seconds(), in, out,
		snap.Media.Lost, snap.Media.Late)
	frames := uint64(span / (20 * time.Millisecond))
	require.Greater(t, in, frames*8/10, "the caller's packets in stopped counting at the bridge")
	require.Greater(t, out, frames*8/10, "the caller's packets out stopped counting at the bridge")

	rec := d.JSON(t, "GET", "/v1/calls/"+c.ID(), d.OwnerKey, nil, 200)
	require.Equal(t, fmt.Sprint(pre["transcript"]), fmt.Sprint(rec["transcript"]), "the transcript until the bridge is kept, and nothing after")
	trs, _ := rec["transfers"].([]any)
	require.Len(t, trs, 1)
	tr := trs[0].(map[string]any)
	require.Equal(t, "bridged", tr["outcome"])
	leg, _ := tr["leg"].(map[string]any)
	require.NotNil(t, leg, "the record does not list the human's leg: %v", tr)
	require.NotEmpty(t, leg["sip_call_id"])
	require.Contains(t, leg["to"], "human")
	require.Equal(t, "PCMU", leg["codec"])
	// The human's leg's media figures, noted when it left.
	var gone map[string]any
	for _, e := range recordEvents(rec, "party") {
		if data, _ := e["data"].(map[string]any); data["party_id"] == leg["party_id"] {
			gone = data
		}
	}
	require.NotNil(t, gone, "no media figures of the human's leg: %v", recordEvents(rec, "party"))
	hm := gone["media"].(map[string]any)
	t.Logf("the human's leg: %v", hm)
	require.Greater(t, hm["packets_in"], float64(frames*8/10), "the human's leg received too little")
	require.Greater(t, hm["packets_out"], float64(frames*8/10), "the human's leg sent too little")
	m := rec["media"].(map[string]any)
	require.Equal(t, float64(snap.Media.PacketsIn), m["packets_in"])

	var raw []byte
	require.Eventually(t, func() bool {
		var status int
		status, _, raw = d.Do(t, "GET", "/v1/calls/"+c.ID()+"/recording", d.OwnerKey, nil)
		return status == 200
	}, 5*time.Second, 100*time.Millisecond)
	a, err := wav.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 2, a.Channels)
	require.Equal(t, 8000, a.SampleRate)
	left, right := classify(stereoChannel(a, 0)), classify(stereoChannel(a, 1))
	t.Logf("recording, caller: %s", left)
	t.Logf("recording, heard:  %s", right)
	b := strings.Index(right, strings.Repeat(heardHuman, 10))
	require.Greater(t, b, 0, "the recording has no human after the bridge")
	require.Contains(t, right[:b], strings.Repeat(heardOther, 5), "the recording has no greeting before the bridge")
	require.GreaterOrEqual(t, strings.Count(right[b:], heardHuman), (len(right)-b)*8/10, "the human's tone is not in the recording to its end")
	require.Contains(t, left[b:], strings.Repeat(heardCaller, 10), "the caller's channel stopped at the bridge")
}
