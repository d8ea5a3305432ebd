package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media/wav"
	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

// toolSummary is what the scripted model writes about the caller when it
// calls transfer_call: the human hears it as (part of) the briefing.
const toolSummary = "The caller, Dana Whitfield, was charged twice for her March invoice and wants one of the two payments refunded to her card."

// toolAgent creates an agent on the scripted model (no greeting, no
// transfer announcement) whose one transfer target is target, and routes
// number to it.
func toolAgent(t *testing.T, e *headersEnv, number string, target map[string]any) {
	t.Helper()
	ag := e.agent(t, map[string]any{"greeting": "", "transfer_announcement": "", "transfer_targets": []map[string]any{target}})
	e.number(t, number, map[string]any{"agent_id": ag})
}

// callTool makes the scripted model call transfer_call for target with
// the summary, and returns the function call's id.
func callTool(t *testing.T, conn *realtimetest.Conn, target, summary string) string {
	t.Helper()
	args, err := json.Marshal(map[string]string{"target": target, "summary": summary})
	require.NoError(t, err)
	id, err := conn.FunctionCall("transfer_call", string(args))
	require.NoError(t, err)
	return id
}

// modelFreq is the pitch of the scripted model's audio as the caller
// hears it: realtimetest speaks a 440 Hz tone in audio/pcm.
func modelFreq(t *testing.T, conn *realtimetest.Conn) float64 {
	t.Helper()
	s := conn.Session()
	f := s.OutputFormat().FormatType()
	require.Equal(t, realtime.FormatPCM, f, "the scripted model's tone is a 440 Hz sine in audio/pcm only")
	return 440
}

// toneStart is the first 20 ms window, from window from on, that starts
// n windows in a row of a tone at freq (its share of the window's energy
// over 0.8): -1 when there is none.
func toneStart(pcm []int16, from int, freq float64, n int) int {
	const win = 160
	run := 0
	for w := from; (w+1)*win <= len(pcm); w++ {
		if goertzel(pcm[w*win:(w+1)*win], freq) > 0.8 {
			run++
			if run == n {
				return w - n + 1
			}
		} else {
			run = 0
		}
	}
	return -1
}

// lastSoundBefore is the last 20 ms window before window end that is not
// silent: where the hold audio stopped.
func lastSoundBefore(pcm []int16, end int) int {
	const win = 160
	for w := end - 1; w >= 0; w-- {
		var e float64
		for _, v := range pcm[w*win : (w+1)*win] {
			e += float64(v) * float64(v)
		}
		if math.Sqrt(e/win) >= 100 {
			return w
		}
	}
	return -1
}

// firstSound is the first 100 ms window that is not silent.
func firstSound(heard string) int {
	return strings.IndexFunc(heard, func(r rune) bool { return string(r) != heardSilence })
}

// stepAt is when the transfer's step status happened (wall clock).
func stepAt(t *testing.T, tr map[string]any, status string) time.Time {
	t.Helper()
	steps, _ := tr["steps"].([]any)
	for _, x := range steps {
		if st := x.(map[string]any); st["status"] == status {
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(st["at"]))
			require.NoError(t, err, "at: %v", st)
			return at
		}
	}
	t.Fatalf("no step %s: %v", status, steps)
	return time.Time{}
}

// lastStepMS is the elapsed_ms of the transfer's last step: its outcome.
func lastStepMS(t *testing.T, tr map[string]any) float64 {
	t.Helper()
	steps, _ := tr["steps"].([]any)
	require.NotEmpty(t, steps, "no steps: %v", tr)
	ms, _ := steps[len(steps)-1].(map[string]any)["elapsed_ms"].(float64)
	return ms
}

// TestTransferToolWarm: the model calls the built-in transfer_call tool
// with a summary, for an agent's warm target without a briefing of its
// own: sipp is the human. Key 1 bridges the baresip caller to the human
// (the caller hears the hold music, then the human) and the model session
// is closed. Every other outcome (key 2, key 2 from a phone that then
// never answers the BYE, busy, no answer within the target's timeout_s,
// a voicemail, the human hanging up during the briefing) comes back to
// the model as the tool's result naming the outcome and why, less than a
// second after it happened; the model answers at once and the caller
// hears it less than a second after the hold music stopped.
func TestTransferToolWarm(t *testing.T) {
	t.Parallel()
	hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
	voice, _ := calleePcap(t, tonePCM(humanTone, 5))
	greeting := espeakPCM(t, "Hi, you have reached the voicemail of Alex Morgan at Acme Logistics. I am not able to take your call right now. "+
		"Please leave your name, your number and a short message after the tone, and I will call you back as soon as I can.")
	box, _ := calleePcap(t, silencePCM(200*time.Millisecond), greeting, silencePCM(600*time.Millisecond), beepPCM(500*time.Millisecond))
	cases := []struct {
		name    string
		h       human
		timeout int
		outcome string
		reason  string // in the tool's result
	}{
		{"accepted", human{Name: "tool1", RingMs: 300, Hello: hello, Key: "1", KeyAfterMs: 3000, Voice: voice}, 0, "bridged", ""},
		{"declined", human{Name: "tool2", RingMs: 300, Hello: hello, Key: "2", KeyAfterMs: 3000}, 0, "declined", "pressed 2"},
		// The phone presses 2 and is gone: the appliance's BYE is never
		// answered. The caller and the model need not wait for it.
		{"declined, the phone gone", human{Name: "toolgone", RingMs: 300, Hello: hello, Key: "2", KeyAfterMs: 3000, IgnoreBye: 13000}, 0, "declined", "pressed 2"},
		{"hung up mid-briefing", human{Name: "toolbye", RingMs: 300, Hello: hello, HangupAfterMs: 3000}, 0, "declined", "hung up"},
		{"busy", human{Name: "toolbusy", Status: 486, Reason: "Busy Here", RingMs: 2500}, 0, "busy", "Busy"},
		{"no answer", human{Name: "toolnoanswer", NoAnswer: true}, 5, "no_answer", ""},
		{"voicemail", human{Name: "toolvm", RingMs: 300, Hello: box}, 0, "voicemail", "machine"},
	}
	var (
		mu      sync.Mutex
		figures []string
	)
	// Each outcome has a daemon of its own: they run side by side.
	t.Run("outcomes", func(t *testing.T) {
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e := newHeadersEnv(t, nil)
				uri, sipp := startHuman(t, tc.h)
				dumpOnFail(t, e.d, sipp)
				number := fmt.Sprintf("+141555574%02d", i)
				target := map[string]any{"name": "billing", "uri": uri, "description": "invoices and payments", "mode": "warm"}
				if tc.timeout > 0 {
					target["timeout_s"] = tc.timeout
				}
				toolAgent(t, e, number, target)
				// The caller hangs up when its file ends: after the human's
				// voice (accepted), after the model spoke again (otherwise).
				src := writeWAV(t, t.TempDir(), "caller.wav", silencePCM(16*time.Second))
				caller := startBaresip(t, "caller", src, "sip:"+number+"@"+e.d.App.SIPAddr().String(), 40*time.Second)
				conn := e.accept(t)
				instructions(t, conn)
				c := liveCall(t, e.d, caller.out.String)
				freq := modelFreq(t, conn)
				callID := callTool(t, conn, "billing", toolSummary)

				ctx := ctxFor(t, 40*time.Second)
				var told time.Time
				if tc.outcome == "bridged" {
					select {
					case <-conn.Done():
					case <-time.After(20 * time.Second):
						t.Fatal("the model session is still open after the bridge")
					}
				} else {
					out, err := conn.AwaitFunctionOutput(ctx, callID)
					require.NoError(t, err)
					told = time.Now()
					t.Logf("the model was told: %s", out)
					var o map[string]any
					require.NoError(t, json.Unmarshal([]byte(out), &o), out)
					require.Equal(t, false, o["transferred"], out)
					require.Equal(t, tc.outcome, o["status"], out)
					require.Contains(t, o["reason"], tc.reason, out)
					require.Contains(t, o["message"], tc.outcome, out)
					// The model answers at once (a model that needs no time to
					// think): the gap below is the appliance's.
					_, err = conn.StreamResponse(ctx, realtimetest.Response{Audio: 2 * time.Second, Paced: true, Chunk: 20 * time.Millisecond,
						Transcript: "I am sorry, billing could not take your call."})
					require.NoError(t, err)
				}
				rec := waitRecord(t, e.d, c.ID(), 30*time.Second, func(r map[string]any) bool {
					tr, _ := r["transfers"].([]any)
					return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
				})
				trs := rec["transfers"].([]any)
				tr := trs[0].(map[string]any)
				require.Equal(t, tc.outcome, tr["outcome"], "steps %v, reason %v", transferSteps(rec), tr["reason"])
				require.Equal(t, "agent", tr["by"])
				require.Equal(t, "warm", tr["mode"])
				if tc.reason != "" {
					require.Contains(t, tr["reason"], tc.reason)
				}
				// When the outcome happened: the human's key or BYE (that long
				// after their answer), else the outcome's step.
				decided := stepAt(t, tr, tc.outcome)
				if after := tc.h.KeyAfterMs + tc.h.HangupAfterMs; after > 0 {
					decided = stepAt(t, tr, "answered").Add(time.Duration(after) * time.Millisecond)
				}
				requireNoCalls(t, e.d)
				sipp.wait(t, 15*time.Second)
				require.Zero(t, e.d.App.RTPPortsInUse())

				pcm := caller.heard(t)
				heard := classify(pcm)
				t.Logf("caller heard: %s", heard)
				// The hold music first.
				music := strings.Index(heard, strings.Repeat(heardOther, 20))
				require.GreaterOrEqual(t, music, 0, "no hold music")
				m := musicMatch(pcm[music*800 : (music+20)*800])
				require.Greater(t, m, 0.75, "the caller's hold audio is not the hold music (%.2f)", m)
				if tc.outcome == "bridged" {
					require.Contains(t, heard[music:], strings.Repeat(heardHuman, 10), "the caller never heard the human")
					require.Negative(t, toneStart(pcm, 0, freq, 10), "the caller heard the model")
					return
				}
				// Then the model: its tone, after the music stopped (no other
				// sound between them).
				agent := toneStart(pcm, firstSound(heard)*5, freq, 10)
				require.Positive(t, agent, "the caller never heard the model again")
				stop := lastSoundBefore(pcm, agent)
				require.Less(t, musicMatch(pcm[agent*160:agent*160+16000]), 0.6, "the model's audio is the music")
				require.Greater(t, musicMatch(pcm[max(0, stop-100)*160:(stop+1)*160]), 0.75, "what the caller heard before the model is not the music")
				toldMS := told.Sub(decided).Milliseconds()
				waitMS := (agent - stop - 1) * 20
				mu.Lock()
				figures = append(figures, fmt.Sprintf("%s: the model told %d ms after the outcome; the caller hears it %d ms after the music stopped", tc.name, toldMS, waitMS))
				mu.Unlock()
				t.Logf("%s: the model told %d ms after the outcome; the caller hears it %d ms after the music stopped", tc.outcome, toldMS, waitMS)
				require.Less(t, toldMS, int64(1000), "the model was told more than a second after the outcome")
				require.Less(t, waitMS, 1000, "the caller waited more than a second for the agent once the music stopped")
			})
		}
	})
	for _, f := range figures {
		t.Log(f)
	}
}

// TestTransferToolBriefing: the human of an agent's warm target (accept
// on answer; a briefing of the target's own) is a baresip that records:
// it hears the target's briefing followed by the model's summary, about
// as long as both spoken, then the caller's tone; the caller hears the
// music, then the human's tone.
func TestTransferToolBriefing(t *testing.T) {
	t.Parallel()
	e := newHeadersEnv(t, nil)
	const number, briefing = "+14155557420", "A caller from the billing line."
	dir := t.TempDir()
	humanWAV := writeWAV(t, dir, "human.wav", silencePCM(500*time.Millisecond), ttsPCM(t, "Hello?"), silencePCM(16*time.Second), tonePCM(humanTone, 5))
	human := startBaresip(t, "human", humanWAV, "", 60*time.Second)
	toolAgent(t, e, number, map[string]any{"name": "billing", "uri": human.uri, "mode": "warm", "accept": "answer", "briefing": briefing})
	callerWAV := writeWAV(t, dir, "caller.wav", silencePCM(time.Second), tonePCM(callerTone, 40))
	caller := startBaresip(t, "caller", callerWAV, "sip:"+number+"@"+e.d.App.SIPAddr().String(), 60*time.Second)
	conn := e.accept(t)
	instructions(t, conn)
	c := liveCall(t, e.d, caller.out.String)
	callTool(t, conn, "billing", toolSummary)
	rec := waitRecord(t, e.d, c.ID(), 40*time.Second, func(r map[string]any) bool {
		s := transferSteps(r)
		return len(s) > 0 && s[len(s)-1] == "bridged"
	})
	require.Equal(t, []string{"dialing", "answered", "briefing", "bridged"}, withoutRinging(transferSteps(rec)))
	requireNoCalls(t, e.d) // the human hangs up when its file ends

	humanHeard := classify(human.heard(t))
	t.Logf("human heard:  %s", humanHeard)
	a := strings.Index(humanHeard, strings.Repeat(heardCaller, 10))
	require.Greater(t, a, 0, "the human never heard the caller's tone")
	said := strings.Count(humanHeard[:a], heardOther)
	ref := len(ttsPCM(t, briefing+" "+toolSummary)) / 800
	alone := len(ttsPCM(t, briefing)) / 800
	t.Logf("the human heard %d00 ms of briefing; the briefing and the summary spoken are %d00 ms, the briefing alone %d00 ms", said, ref, alone)
	require.Greater(t, said, ref*3/4, "the human did not hear the model's summary")
	require.Less(t, said, ref*5/4+5)
	callerHeard := classify(caller.heard(t))
	t.Logf("caller heard: %s", callerHeard)
	b := strings.Index(callerHeard, strings.Repeat(heardHuman, 10))
	require.Greater(t, b, 0, "the caller never heard the human")
	require.Zero(t, e.d.App.RTPPortsInUse())
}

// TestTransferToolKeepListening: an agent's bridge target with
// keep_listening: once the caller is bridged to the human (sipp), the
// tool's result says so, the model session stays open and keeps hearing
// the caller (audio appended), the caller's words it transcribes go on
// into the call record, and what the model says reaches nobody: the
// caller hears the human only.
func TestTransferToolKeepListening(t *testing.T) {
	t.Parallel()
	e := newHeadersEnv(t, nil)
	const number = "+14155557421"
	voice, _ := calleePcap(t, tonePCM(humanTone, 8))
	uri, sipp := startHuman(t, human{Name: "listen", RingMs: 300, Voice: voice})
	dumpOnFail(t, e.d, sipp)
	toolAgent(t, e, number, map[string]any{"name": "desk", "uri": uri, "mode": "bridge", "keep_listening": true})
	src := writeWAV(t, t.TempDir(), "caller.wav", silencePCM(time.Second), tonePCM(callerTone, 12))
	caller := startBaresip(t, "caller", src, "sip:"+number+"@"+e.d.App.SIPAddr().String(), 40*time.Second)
	conn := e.accept(t)
	instructions(t, conn)
	c := liveCall(t, e.d, caller.out.String)
	freq := modelFreq(t, conn)
	callID := callTool(t, conn, "desk", "")
	ctx := ctxFor(t, 30*time.Second)
	out, err := conn.AwaitFunctionOutput(ctx, callID)
	require.NoError(t, err)
	require.JSONEq(t, `{"transferred":true,"status":"bridged"}`, out)

	appends := func() int {
		n := 0
		for _, ev := range conn.Received() {
			if ev.EventType() == realtime.TypeInputAudioBufferAppend {
				n++
			}
		}
		return n
	}
	before := appends()
	// The model speaks: nobody may hear it.
	_, err = conn.StreamResponse(ctx, realtimetest.Response{Audio: 2 * time.Second, Paced: true, Chunk: 20 * time.Millisecond, Transcript: "Nobody hears this."})
	require.NoError(t, err)
	require.Greater(t, appends(), before+50, "the model no longer hears the caller after the bridge")
	select {
	case <-conn.Done():
		t.Fatal("the model session closed at the bridge")
	default:
	}
	const after = "Thanks, I will wait for the invoice number."
	require.NoError(t, conn.Send(&realtime.InputAudioTranscriptionCompleted{ItemID: "item_after_bridge", Transcript: after}))
	waitRecord(t, e.d, c.ID(), 10*time.Second, func(r map[string]any) bool {
		return strings.Contains(fmt.Sprint(r["transcript"]), after)
	})
	requireNoCalls(t, e.d) // the caller hangs up when its file ends
	select {
	case <-conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the model session outlived the call")
	}
	sipp.wait(t, 10*time.Second)
	require.Zero(t, e.d.App.RTPPortsInUse())
	rec := e.d.JSON(t, "GET", "/v1/calls/"+c.ID(), e.d.OwnerKey, nil, 200)
	require.Equal(t, "bridged", rec["transfers"].([]any)[0].(map[string]any)["outcome"])

	pcm := caller.heard(t)
	heard := classify(pcm)
	t.Logf("caller heard: %s", heard)
	require.Contains(t, heard, strings.Repeat(heardHuman, 10), "the caller never heard the human")
	require.Negative(t, toneStart(pcm, 0, freq, 5), "the caller heard the model after the bridge")
}

// holdPattern is the hold WAV of TestTransferHoldAudioFiles: beeps of
// two pitches and uneven lengths (2.4 s, 8 kHz), so its envelope is its
// own.
func holdPattern() []int16 {
	var pcm []int16
	for _, p := range []struct {
		freq float64
		ms   int
	}{{600, 300}, {0, 200}, {900, 150}, {0, 450}, {600, 600}, {0, 700}} {
		if p.freq == 0 {
			pcm = append(pcm, silencePCM(time.Duration(p.ms)*time.Millisecond)...)
			continue
		}
		pcm = append(pcm, tonePCM(p.freq, float64(p.ms)/1000)...)
	}
	return pcm
}

// loopMatch is the best normalised correlation of the 20 ms envelope of
// pcm (8 kHz) with the loop ref's, over every phase of the loop.
func loopMatch(pcm, ref []int16) float64 {
	r := agentRMS(ref)
	got := agentRMS(pcm)
	loop := append(append(append([]float64(nil), r...), r...), r...)
	best := -1.0
	for lag := 0; lag < len(r); lag++ {
		if c := agentNCC(got, loop[lag:], 0); c > best {
			best = c
		}
	}
	return best
}

// TestTransferHoldAudioFiles: hold audio as a WAV file under the audio
// directory and as a prompt spoken by the TTS engine, with POST
// /hold (then /resume) and as a transfer's hold_audio (the human, sipp,
// is busy after a while): the baresip caller hears the file, or the
// prompt, over and over, each time.
func TestTransferHoldAudioFiles(t *testing.T) {
	t.Parallel()
	audio := t.TempDir()
	const prompt = "Please hold, we are checking your order."
	file := holdPattern()
	require.NoError(t, os.WriteFile(filepath.Join(audio, "hold.wav"), wav.Encode(file, 8000), 0o600))
	d := callDaemon(t, map[string]string{"SWITCHBOARD_TRANSFER_AUDIO_DIR": audio})
	number := transferAgent(t, d, "+14155557422")
	spoken := append(ttsPCM(t, prompt), silencePCM(4*time.Second)...)
	busy := func(ms int) string {
		uri, sipp := startHuman(t, human{Name: fmt.Sprintf("busy%d", ms), Status: 486, Reason: "Busy Here", RingMs: ms})
		dumpOnFail(t, d, sipp)
		return uri
	}
	busy1, busy2 := busy(4000), busy(7000)
	src := writeWAV(t, t.TempDir(), "caller.wav", silencePCM(45*time.Second))
	caller := startBaresip(t, "caller", src, "sip:"+number+"@"+d.App.SIPAddr().String(), 70*time.Second)
	c := liveCall(t, d, caller.out.String)
	// Times are the call's: the frames it sent the caller (whose
	// recording starts with the first), not the test's clock.
	at := func() time.Duration { return time.Duration(c.Leg().Stats().PacketsOut) * 20 * time.Millisecond }
	wait := func(d time.Duration) {
		end := at() + d
		require.Eventually(t, func() bool { return at() >= end }, d+20*time.Second, 10*time.Millisecond, "the call stopped sending")
	}
	path := "/v1/calls/" + c.ID()
	type segment struct {
		name       string
		ref        []int16
		start, end time.Duration
	}
	var segs []segment
	hold := func(name, audio string, ref []int16, d0 time.Duration) {
		wait(time.Second)
		s := at()
		d.JSON(t, "POST", path+"/hold", d.OwnerKey, map[string]any{"audio": audio}, 200)
		wait(d0)
		segs = append(segs, segment{name, ref, s, at()})
		d.JSON(t, "POST", path+"/resume", d.OwnerKey, map[string]any{}, 200)
	}
	hold("hold with the WAV file", "hold.wav", file, 5*time.Second)
	hold("hold with the prompt", prompt, spoken, 7*time.Second)
	transfer := func(name, audio, uri string, ref []int16) {
		wait(time.Second)
		s := at()
		id := d.JSON(t, "POST", path+"/transfer", d.OwnerKey, map[string]any{"target_uri": uri, "mode": "bridge", "hold_audio": audio}, 202)["transfer_id"].(string)
		rec := waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
			tr, _ := r["transfers"].([]any)
			for _, x := range tr {
				if m := x.(map[string]any); m["transfer_id"] == id && m["outcome"] != nil {
					return true
				}
			}
			return false
		})
		tr := recordTransfer(t, rec, id)
		require.Equal(t, "busy", tr["outcome"])
		segs = append(segs, segment{name, ref, s, s + time.Duration(lastStepMS(t, tr))*time.Millisecond})
		wait(3 * time.Second) // the agent says so
	}
	transfer("transfer with the WAV file", "hold.wav", busy1, file)
	transfer("transfer with the prompt", prompt, busy2, spoken)
	requireNoCalls(t, d) // the caller hangs up when its file ends
	require.Zero(t, d.App.RTPPortsInUse())

	pcm := caller.heard(t)
	t.Logf("caller heard: %s", classify(pcm))
	sample := func(d time.Duration) int { return min(len(pcm), int(d.Seconds()*8000)) }
	for _, s := range segs {
		// A few hundred ms of slack either side: the route changes at
		// the call's next frame, the recording keeps the jitter buffer's.
		seg := pcm[sample(s.start+700*time.Millisecond):sample(s.end-300*time.Millisecond)]
		self, other, music := loopMatch(seg, s.ref), loopMatch(seg, spoken), musicMatch(seg)
		if len(s.ref) == len(spoken) {
			other = loopMatch(seg, file)
		}
		t.Logf("%s (%.1f s): %.2f with its audio, %.2f with the other, %.2f with the music", s.name, float64(len(seg))/8000, self, other, music)
		require.Greater(t, self, 0.75, "%s: the caller did not hear its audio", s.name)
		require.Less(t, other, self-0.2, "%s", s.name)
		require.Less(t, music, 0.6, "%s: the caller heard the music", s.name)
	}
}

// TestTransferHumanHangsUpMidBriefing: the human of a warm transfer of a
// webhook-routed call (sipp) answers and hangs up during the briefing:
// the transfer ends declined ("the human hung up"), the controller gets
// the step as switchboard.call.transfer and the webhook as a signed
// realtime.call.transfer, the record has the outcome, and the caller is
// back on the call (the API then hangs it up).
func TestTransferHumanHangsUpMidBriefing(t *testing.T) {
	t.Parallel()
	const number = "+14155557423"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s"}, h, number)
	hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
	uri, human := startHuman(t, human{Name: "midbriefing", RingMs: 200, Hello: hello, HangupAfterMs: 2500})
	dumpOnFail(t, d, human)
	caller := startSipp(t, d, number, sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
	c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)

	tid := d.JSON(t, "POST", "/v1/calls/"+id+"/transfer", d.OwnerKey, map[string]any{
		"target_uri": uri, "mode": "warm", "briefing": toolSummary}, 202)["transfer_id"].(string)
	var got []string
	var last map[string]any
	for len(got) == 0 || got[len(got)-1] == "dialing" || got[len(got)-1] == "ringing" || got[len(got)-1] == "answered" || got[len(got)-1] == "briefing" {
		last = c.next(t, "switchboard.call.transfer", 20*time.Second)
		require.Equal(t, tid, last["transfer_id"], "%v", last)
		got = append(got, fmt.Sprint(last["status"]))
	}
	require.Equal(t, []string{"dialing", "answered", "briefing", "declined"}, withoutRinging(got), "controller: %v", got)
	require.Equal(t, "the human hung up", last["reason"])
	var hooked []string
	for len(hooked) < len(got) {
		ev := h.next(t, "realtime.call.transfer", 10*time.Second)
		require.Equal(t, tid, ev.Data["transfer_id"])
		hooked = append(hooked, fmt.Sprint(ev.Data["status"]))
		if ev.Data["status"] == "declined" {
			require.Equal(t, "the human hung up", ev.Data["reason"])
		}
	}
	require.ElementsMatch(t, got, hooked, "the webhook gets the steps the controller got")
	human.wait(t, 10*time.Second)
	rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
	tr := recordTransfer(t, rec, tid)
	require.Equal(t, "declined", tr["outcome"])
	require.Equal(t, "the human hung up", tr["reason"])
	require.Equal(t, "active", rec["state"], "the caller is still on the call")

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	caller.wait(t, 10*time.Second)
	requireNoCalls(t, d)
	require.Zero(t, d.App.RTPPortsInUse())
}

// TestTransferOtherTeam: another team's key cannot transfer, hold or
// resume a call of this team (404, as an unknown call), and nothing
// starts.
func TestTransferOtherTeam(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557424")
	other := otherTeamKey(t, d)
	peer := newRTPPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := siptest.NewSoftphone(t).Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: number,
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(peer.port())), Codecs: []sip.Codec{sip.PCMU}})
	require.NoError(t, err)
	c := liveCall(t, d)
	bodies := map[string]any{"transfer": map[string]any{"target_uri": "sip:human@127.0.0.1:5999", "mode": "warm"}, "hold": map[string]any{}, "resume": map[string]any{}}
	for _, verb := range []string{"transfer", "hold", "resume"} {
		status, _, raw := d.Do(t, "POST", "/v1/calls/"+c.ID()+"/"+verb, other, bodies[verb])
		require.Equal(t, 404, status, "%s by another team: %s", verb, raw)
		code, _, msg := apptest.ErrorOf(t, raw)
		require.NotEmpty(t, code, "%s", raw)
		require.NotEmpty(t, msg, "%s", raw)
	}
	rec := d.JSON(t, "GET", "/v1/calls/"+c.ID(), d.OwnerKey, nil, 200)
	require.Empty(t, transferSteps(rec), "nothing was started")
	for _, ev := range recordEvents(rec, "event") {
		require.NotEqual(t, "hold", ev["text"], "no hold: %v", rec["events"])
	}
	require.NoError(t, out.Hangup(ctx, "done"))
	requireNoCalls(t, d)
}

// TestTransferHumanMediaStops: the human's phone answers, says hello and
// then sends no more RTP during the briefing (its media stopped): once
// rtp.media_timeout passes without a packet the appliance hangs up the
// human's leg, the transfer ends failed with a reason that says so, long
// before the accept timeout, and the caller is back with the agent, who
// says so.
func TestTransferHumanMediaStops(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, map[string]string{"SWITCHBOARD_MEDIA_TIMEOUT": "3s"})
	number := transferAgent(t, d, "+14155557425")
	hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
	uri, sipp := startHuman(t, human{Name: "mute", RingMs: 200, Hello: hello})
	dumpOnFail(t, d, sipp)
	caller := startBaresip(t, "caller", writeWAV(t, t.TempDir(), "caller.wav", silencePCM(25*time.Second)),
		"sip:"+number+"@"+d.App.SIPAddr().String(), 40*time.Second)
	c := liveCall(t, d, caller.out.String)
	id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{
		"target_uri": uri, "mode": "warm", "briefing": toolSummary + " " + toolSummary}, 202)["transfer_id"].(string)
	rec := waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
		tr, _ := r["transfers"].([]any)
		return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
	})
	tr := recordTransfer(t, rec, id)
	t.Logf("steps %v: %v after %v ms (%v)", transferSteps(rec), tr["outcome"], tr["duration_ms"], tr["reason"])
	require.Equal(t, "failed", tr["outcome"])
	require.Contains(t, tr["reason"], "media")
	require.Contains(t, transferSteps(rec), "briefing")
	sipp.wait(t, 10*time.Second) // hung up by the appliance
	waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
		return strings.Contains(fmt.Sprint(r["transcript"]), "did not go through")
	})
	requireNoCalls(t, d) // the caller hangs up when its file ends
	require.Zero(t, d.App.RTPPortsInUse())
}
