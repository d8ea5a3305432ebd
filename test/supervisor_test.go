package test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/app/apptest"
	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/realtime/realtimetest"
)

// The supervisor tests tell the parties apart by their tones: the caller
// (baresip's microphone) plays 1000 Hz, the agent (the scripted upstream
// model) speaks 440 Hz, the supervisor's fake microphone 1700 Hz.
const (
	callerHz     = 1000
	agentHz      = 440
	supervisorHz = 1700
)

// supervisorKeyEnv holds the scripted upstream's bearer key.
const supervisorKeyEnv = "SWITCHBOARD_TEST_SUPERVISOR_UPSTREAM_KEY"

// supervisorEnv is a daemon whose number routes to an agent on the
// scripted upstream, so the agent's voice is a tone the test chooses.
type supervisorEnv struct {
	d       *apptest.Daemon
	up      *realtimetest.Server
	number  string
	agentID string
	// rtp and webrtc are the daemon's port ranges, its own so nothing
	// else holds them when the test checks they were released.
	rtp, webrtc portRange
}

func newSupervisorEnv(t *testing.T) *supervisorEnv {
	t.Helper()
	t.Setenv(supervisorKeyEnv, "sk-supervisor-test")
	up := realtimetest.NewServer(t, realtimetest.Options{APIKey: "sk-supervisor-test"})
	rtp, webrtc := takePorts(t, 20), takePorts(t, 50)
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), withDrain(map[string]string{
		"SWITCHBOARD_UPSTREAM_URL": up.URL(), "SWITCHBOARD_UPSTREAM_API_KEY_ENV": supervisorKeyEnv,
		"SWITCHBOARD_RTP_PORTS": rtp.String(), "SWITCHBOARD_WEBRTC_PORTS": webrtc.String(),
	})))
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "supervised agent", "engine": "upstream",
		"recording": map[string]any{"enabled": true}}, 200)["agent_id"].(string)
	const number = "+14155550188"
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "supervised",
		"phone_number": number, "agent_id": ag}, 200)
	return &supervisorEnv{d: d, up: up, number: number, agentID: ag, rtp: rtp, webrtc: webrtc}
}

// toneWAV writes a tone with sox: seconds of freq at rate, mono 16-bit.
func toneWAV(t *testing.T, dir, name string, freq, rate int, seconds float64) string {
	t.Helper()
	_, err := exec.LookPath("sox")
	require.NoError(t, err, "sox must be installed (make deps)")
	out := filepath.Join(dir, name)
	b, err := exec.Command("sox", "-n", "-r", fmt.Sprint(rate), "-c", "1", "-b", "16", out, "synth", fmt.Sprint(seconds),
		"sine", fmt.Sprint(freq), "vol", "0.4").CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// toneLevel is the amplitude of freq in pcm at rate.
func toneLevel(pcm []int16, freq float64, rate int) float64 {
	var re, im float64
	for i, v := range pcm {
		ph := 2 * math.Pi * freq * float64(i) / float64(rate)
		re += float64(v) * math.Cos(ph)
		im += float64(v) * math.Sin(ph)
	}
	return 2 * math.Hypot(re, im) / float64(len(pcm))
}

// toneWindows cuts 8 kHz pcm into 100 ms windows and gives, for each, the
// amplitude of every tone of the test.
func toneWindows(pcm []int16) []map[int]float64 {
	const w = 800
	var out []map[int]float64
	for i := 0; i+w <= len(pcm); i += w {
		win := pcm[i : i+w]
		out = append(out, map[int]float64{callerHz: toneLevel(win, callerHz, 8000), agentHz: toneLevel(win, agentHz, 8000),
			supervisorHz: toneLevel(win, supervisorHz, 8000)})
	}
	return out
}

// toneShare is the share of windows in which freq is heard (above
// level).
func toneShare(ws []map[int]float64, freq int, level float64) float64 {
	if len(ws) == 0 {
		return 0
	}
	n := 0
	for _, w := range ws {
		if w[freq] > level {
			n++
		}
	}
	return float64(n) / float64(len(ws))
}

// medianLevel is freq's median amplitude over the windows.
func medianLevel(ws []map[int]float64, freq int) float64 {
	if len(ws) == 0 {
		return 0
	}
	v := make([]float64, len(ws))
	for i, w := range ws {
		v[i] = w[freq]
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// heardTones says how loud each tone was, for the log and the failures,
// with the windows each was heard in (C caller, A agent, S supervisor,
// . none).
func heardTones(ws []map[int]float64) string {
	return fmt.Sprintf("caller %.0f, agent %.0f, supervisor %.0f (median amplitudes over %d windows) %s",
		medianLevel(ws, callerHz), medianLevel(ws, agentHz), medianLevel(ws, supervisorHz), len(ws), tonePattern(ws))
}

// tonePattern writes, window by window, the tones heard in it.
func tonePattern(ws []map[int]float64) string {
	var b []byte
	for _, w := range ws {
		n := len(b)
		for _, tn := range []struct {
			hz int
			c  byte
		}{{callerHz, 'C'}, {agentHz, 'A'}, {supervisorHz, 'S'}} {
			if w[tn.hz] > heardLevel {
				b = append(b, tn.c)
			}
		}
		if len(b) == n {
			b = append(b, '.')
		}
		b = append(b, ' ')
	}
	return string(b)
}

// heardLevel: a tone is heard in a window above this amplitude. The tones
// are played at 40% of full scale (about 13,000); measured medians: the
// caller 12,500 and the agent 7,500 at the supervisor's browser, the
// agent 8,000 at baresip; the supervisor's microphone 1,400 at baresip
// (chromium's noise suppressor takes a steady tone for noise and cuts it
// by some 20 dB). A tone that is not there measures below 10 (what leaks
// of one into another's bin, G.711's noise).
const heardLevel = 300.0

// requireMixed checks that a listener heard the caller and the agent
// together: in the windows where anything is heard, both tones (90%); and
// something in most windows (75%: a loaded machine's players stall for
// half a second now and then, which is not what is tested here).
func requireMixed(t *testing.T, ws []map[int]float64, who string) {
	t.Helper()
	var heard []map[int]float64
	for _, w := range ws {
		if w[callerHz] > heardLevel || w[agentHz] > heardLevel {
			heard = append(heard, w)
		}
	}
	require.GreaterOrEqual(t, float64(len(heard)), 0.75*float64(len(ws)), "%s hears the call: %s", who, heardTones(ws))
	require.GreaterOrEqual(t, toneShare(heard, callerHz, heardLevel), 0.9, "%s hears the caller: %s", who, heardTones(ws))
	require.GreaterOrEqual(t, toneShare(heard, agentHz, heardLevel), 0.9, "%s hears the agent with the caller: %s", who, heardTones(ws))
}

// TestConsoleSupervisor: baresip calls a number whose agent (a scripted
// model) speaks a 440 Hz tone while baresip plays 1000 Hz. In Debian's
// chromium, a supervisor signed in to the console with a calls-only key
// clicks Listen on the live call and hears both tones mixed; clicks Take
// over and hears the caller's tone alone, while baresip, which heard the
// agent until then, now hears the supervisor's fake microphone (1700 Hz);
// the model session is closed and the call goes on; the supervisor hangs
// up and the caller is hung up on. The record says who listened and took
// over, and when; the recording has the caller on the left and, on the
// right, the agent and then the supervisor. Nothing leaks: no call, no goroutine, no RTP or WebRTC
// port.
func TestConsoleSupervisor(t *testing.T) {
	requireBrowser(t)
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	ignore := goleak.IgnoreCurrent()
	e := newSupervisorEnv(t)
	d := e.d
	dir := t.TempDir()
	shots := artefactDir(t)
	desk := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "desk supervisor",
		"acls": []string{"api-key:endpoint:calls", "api-key:model:*"}}, 200)
	deskID := desk["apiKeyId"].(string)

	callerWAV := toneWAV(t, dir, "caller.wav", callerHz, 8000, 200)
	micWAV := toneWAV(t, dir, "mic.wav", supervisorHz, 48000, 30)
	rec, out, stopBaresip := agentBaresipDial(t, dir, callerWAV, "sip:"+e.number+"@"+d.App.SIPAddr().String(), 190*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Second)
	defer cancel()
	uc, err := e.up.Accept(ctx)
	require.NoError(t, err, "the agent's model session: %s", out.String())
	c := liveCall(t, d, func() string { return tail(out.String(), 3000) })
	// The agent speaks: a 440 Hz tone, in real time, for as long as it may.
	spoke := make(chan error, 1)
	go func() {
		_, err := uc.StreamResponse(ctx, realtimetest.Response{Audio: 190 * time.Second, Paced: true})
		spoke <- err
	}()

	var seen struct {
		Shots          []string `json:"shots"`
		Card           string   `json:"card"`
		CardAfter      string   `json:"cardAfter"`
		ListenStatus   string   `json:"listenStatus"`
		ListenParty    string   `json:"listenParty"`
		TakeoverStatus string   `json:"takeoverStatus"`
		TakeoverParty  string   `json:"takeoverParty"`
		StoppedStatus  string   `json:"stoppedStatus"`
		ListenMs       int      `json:"listenMs"`
		TakeoverMs     int      `json:"takeoverMs"`
		Listen         []int16  `json:"listen"`
		Talk           []int16  `json:"talk"`
	}
	start := time.Now()
	runBrowser(t, map[string]any{"kind": "supervise", "url": d.URL, "key": desk["apiKey"], "callId": c.ID(), "wav": micWAV,
		"shots": shots, "listenSeconds": 4, "talkSeconds": 6}, 3*time.Minute, &seen)
	t.Logf("console: %q → %q → %q; card %q → %q (%.1f s)", seen.ListenStatus, seen.TakeoverStatus, seen.StoppedStatus,
		seen.Card, seen.CardAfter, time.Since(start).Seconds())
	t.Logf("figures: Listen clicked → listening %d ms; Take over clicked → on the call %d ms", seen.ListenMs, seen.TakeoverMs)
	require.Contains(t, seen.CardAfter, "taken over")
	require.Equal(t, "hung up", seen.StoppedStatus)

	// Listening, the supervisor heard the caller and the agent, mixed,
	// and nothing of their own microphone. The first half second is the
	// connection settling.
	rs, err := media.NewResampler(48000, 8000)
	require.NoError(t, err)
	listen := toneWindows(rs.Process(nil, seen.Listen))
	require.Greater(t, len(listen), 30, "4 s of listening recorded")
	listen = listen[5:]
	t.Logf("listening, the supervisor heard %s", heardTones(listen))
	if toneShare(listen, agentHz, heardLevel) < 0.5 { // once, on a load of 10: the agent's stream stopped early
		t.Logf("the listener hardly heard the agent; the daemon's log:\n%s", tail(d.Logs.String(), 4000))
	}
	requireMixed(t, listen, "the listening supervisor")
	require.LessOrEqual(t, toneShare(listen, supervisorHz, heardLevel), 0.05, "nobody's microphone is heard: %s", heardTones(listen))

	// Having taken over, the supervisor hears the caller alone: the agent
	// is gone.
	rs, err = media.NewResampler(48000, 8000)
	require.NoError(t, err)
	talk := toneWindows(rs.Process(nil, seen.Talk))
	require.Greater(t, len(talk), 50, "6 s of talking recorded")
	// The browser's connection is up a moment before the appliance's end
	// of it, which joins the call then: the caller is heard from there on
	// (within 1.5 s), without a gap.
	onset := slices.IndexFunc(talk, func(w map[int]float64) bool { return w[callerHz] > heardLevel })
	require.True(t, onset >= 0 && onset <= 15, "the supervisor hears the caller within 1.5 s of the takeover: %s", heardTones(talk))
	t.Logf("figures: after the takeover, the supervisor heard the caller %d ms after the browser's connection was up (100 ms windows)", onset*100)
	talk = talk[onset:]
	t.Logf("after the takeover, the supervisor heard %s", heardTones(talk))
	require.GreaterOrEqual(t, toneShare(talk, callerHz, heardLevel), 0.8, "the supervisor hears the caller: %s", heardTones(talk))
	require.LessOrEqual(t, toneShare(talk, agentHz, heardLevel), 0.05, "the agent is gone: %s", heardTones(talk))

	// The model session was closed at the takeover, while the call went
	// on.
	select {
	case <-uc.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the model session is still open after the takeover")
	}
	require.Error(t, <-spoke, "the agent's response was cut by the end of the session")

	// The supervisor hung up: the call ends, the caller is hung up on.
	requireNoCalls(t, d)
	snap := c.Snapshot()
	require.Equal(t, "appliance", snap.EndedBy)
	require.Equal(t, "the supervisor hung up", snap.EndReason)
	record := d.JSON(t, "GET", "/v1/calls/"+c.ID(), d.OwnerKey, nil, 200)
	var steps []string
	var takeoverAt time.Time
	for _, ev := range record["events"].([]any) {
		ev := ev.(map[string]any)
		if ev["kind"] != "supervisor" {
			continue
		}
		data := ev["data"].(map[string]any)
		require.Equal(t, deskID, data["key_id"])
		require.Equal(t, "desk supervisor", data["key_name"])
		steps = append(steps, ev["text"].(string)+" "+data["party_id"].(string))
		if ev["text"] == "takeover" {
			takeoverAt, err = time.Parse(time.RFC3339Nano, ev["at"].(string))
			require.NoError(t, err)
		}
	}
	// The listening connection closes as the takeover's comes up: which
	// of the two the call sees first is the network's business, each
	// party's own steps are in order, and the supervisor's hangup is last.
	require.ElementsMatch(t, []string{"listen " + seen.ListenParty, "takeover " + seen.TakeoverParty, "left " + seen.ListenParty,
		"left " + seen.TakeoverParty}, steps, "the record: who listened, who took over, when each left")
	require.Less(t, slices.Index(steps, "listen "+seen.ListenParty), slices.Index(steps, "left "+seen.ListenParty), "%q", steps)
	require.Equal(t, "left "+seen.TakeoverParty, steps[len(steps)-1], "%q", steps)
	require.WithinDuration(t, time.Now(), takeoverAt, 30*time.Second)

	// baresip heard the agent, then, from the takeover on, the
	// supervisor and never the agent again.
	var decs []string
	require.Eventually(t, func() bool {
		decs, _ = filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
		return len(decs) == 1
	}, 10*time.Second, 50*time.Millisecond, "baresip's recording: %s", out.String())
	stopBaresip() // its dumps are whole once it exited
	heard, rate := agentReadWAV(t, decs[0])
	require.Equal(t, 8000, rate)
	ws := toneWindows(heard)
	first := -1
	for i, w := range ws {
		if w[supervisorHz] > heardLevel {
			first = i
			break
		}
	}
	require.GreaterOrEqual(t, first, 0, "baresip never heard the supervisor: %s", heardTones(ws))
	before, after := ws[:first], ws[min(first+2, len(ws)):]
	lastAgent := -1
	for i, w := range before {
		if w[agentHz] > heardLevel {
			lastAgent = i
		}
	}
	// What the caller hears at the switch: the agent until the takeover,
	// then the supervisor; silence between the two is the gap (counted in
	// whole 100 ms windows, so a switch within one window counts 0).
	gap := time.Duration(first-lastAgent-1) * 100 * time.Millisecond
	t.Logf("figures: the caller heard nothing for %v between the agent's last sound and the supervisor's first (100 ms windows)", gap)
	require.LessOrEqual(t, gap, time.Second, "the caller is not left in silence at the takeover")
	t.Logf("baresip heard, before the takeover: %s; after: %s (the supervisor in %.0f%% of the windows)", heardTones(before), heardTones(after),
		100*toneShare(after, supervisorHz, heardLevel))
	require.GreaterOrEqual(t, toneShare(before, agentHz, heardLevel), 0.5, "baresip heard the agent before the takeover")
	require.LessOrEqual(t, toneShare(after, agentHz, heardLevel), 0.02, "baresip never hears the agent after the takeover")
	require.GreaterOrEqual(t, toneShare(after, supervisorHz, heardLevel), 0.7, "baresip hears the supervisor after the takeover")
	require.Greater(t, len(after), 40, "baresip heard the supervisor for seconds")

	// The recording goes on across the takeover: the caller on the left
	// throughout, and on the right what the caller heard, the agent and
	// then the supervisor.
	var raw []byte
	require.Eventually(t, func() bool {
		var status int
		var h http.Header
		status, h, raw = d.Do(t, "GET", "/v1/calls/"+c.ID()+"/recording", d.OwnerKey, nil)
		return status == 200 && h.Get("Content-Type") == "audio/wav"
	}, 5*time.Second, 100*time.Millisecond, "the call's recording")
	a, err := wav.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 2, a.Channels)
	left, right := toneWindows(stereoChannel(a, 0)), toneWindows(stereoChannel(a, 1))
	switched := slices.IndexFunc(right, func(w map[int]float64) bool { return w[supervisorHz] > heardLevel })
	require.Greater(t, switched, 0, "the recording's right channel never carries the supervisor: %s", heardTones(right))
	recBefore, recAfter := right[:switched], right[min(switched+2, len(right)):]
	t.Logf("the recording's right channel, before the takeover: %s; after: %s", heardTones(recBefore), heardTones(recAfter))
	require.GreaterOrEqual(t, toneShare(recBefore, agentHz, heardLevel), 0.5, "the recording has the agent before the takeover")
	require.LessOrEqual(t, toneShare(recAfter, agentHz, heardLevel), 0.02, "and never after it")
	require.GreaterOrEqual(t, toneShare(recAfter, supervisorHz, heardLevel), 0.7, "the recording has the supervisor after the takeover")
	require.Greater(t, len(recAfter), 40, "seconds of the supervisor recorded")
	left = left[min(10, len(left)):] // the caller's first second: the answer settling
	require.GreaterOrEqual(t, toneShare(left, callerHz, heardLevel), 0.9, "the recording's left channel is the caller: %s", heardTones(left))
	require.LessOrEqual(t, toneShare(left, supervisorHz, heardLevel), 0.02, "and not the supervisor: %s", heardTones(left))

	requireRangeFree(t, e.webrtc)
	requireRangeFree(t, e.rtp)
	cancel()
	stopBaresip()
	d.Stop(t)
	e.up.Close()
	goleak.VerifyNone(t, ignore)
}
