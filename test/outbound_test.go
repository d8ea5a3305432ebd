package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestOutboundHumanAnswers places a call through a carrier that
// challenges the INVITE with digest (sipp checks the answer), to a callee
// that says "Hello?": the record goes dialing, ringing, answered; the
// detector hears a person; the agent's greeting starts only after the
// callee's hello (never into the ringing), and the model is told.
func TestOutboundHumanAnswers(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	hello, helloLen := calleePcap(t, silencePCM(300*time.Millisecond), espeakPCM(t, "Hello?"), silencePCM(4*time.Second))
	d, sipp, _, agentID := outboundSetup(t, callee{Name: "human", Challenge: 401, User: "acct-7", Password: "Carrier-Pass-93", RingMs: 800, Pcap: hello}, "+18005550142")

	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550199", "from": "+18005550142",
		"agent_id": agentID, "machine_detection": "detect"}, 201)
	id := rec["call_id"].(string)
	require.Equal(t, "outbound", rec["direction"])
	require.Equal(t, "ringing", rec["state"])
	require.Equal(t, "detect", rec["machine_detection"])
	require.Equal(t, "+18005550142", rec["from"])
	require.Equal(t, "+14155550199", rec["to"])

	rec = waitRecord(t, d, id, 20*time.Second, func(r map[string]any) bool {
		return r["answered_by"] == "human" && len(r["transcript"].([]any)) > 0
	})
	require.Equal(t, "answered", rec["progress"])
	require.EqualValues(t, 200, rec["sip_status"])
	var steps []string
	for _, e := range recordEvents(rec, "progress") {
		steps = append(steps, e["text"].(string))
	}
	require.Equal(t, []string{"ringing", "answered", "detected"}, steps)
	opened := recordEvents(rec, "event")
	require.NotEmpty(t, opened)
	var open map[string]any
	for _, e := range opened {
		if e["text"] == "opened" {
			open = e
		}
	}
	require.NotNil(t, open, "the call was opened: %v", opened)
	answered, err := time.Parse(time.RFC3339Nano, rec["answered_at"].(string))
	require.NoError(t, err)
	speak := eventAt(t, open).Sub(answered)
	// The hello ends at 300 ms + its length; a person is known 800 ms of
	// silence later, and not after a second more.
	require.Greater(t, speak, 1000*time.Millisecond, "the agent spoke before the callee's hello was over")
	require.Less(t, speak, helloLen, "the agent waited too long")
	line := rec["transcript"].([]any)[0].(map[string]any)
	require.Equal(t, "assistant", line["role"])
	require.Contains(t, line["text"], "Acme calling")
	require.False(t, eventAt(t, line).Before(eventAt(t, open)), "the greeting came before the opening")

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	sipp.wait(t, 20*time.Second)
	rec = waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	require.Equal(t, "appliance", rec["ended_by"])
	require.Greater(t, rec["media"].(map[string]any)["packets_out"].(float64), 10.0, "the greeting went out as RTP")
	_, _, metrics := d.Do(t, "GET", "/metrics", "", nil)
	require.Contains(t, string(metrics), `switchboard_outbound_answered_by_total{answered_by="human"} 1`)
	require.Contains(t, string(metrics), `switchboard_outbound_calls_total{progress="answered"} 1`)
	requireNoCalls(t, d)
	d.Stop(t)
	requirePortsFree(t, d)
	goleak.VerifyNone(t, ignore)
}

// TestOutboundMachineLeavesMessage: a 12-second voicemail greeting and a
// beep; detect classifies it a machine within seconds, waits for the beep,
// then the model is told to leave its message, which goes out.
func TestOutboundMachineLeavesMessage(t *testing.T) {
	greeting := espeakPCM(t, "Hi, you have reached the voicemail of Alex Morgan at Acme Logistics. I am not able to take your call right now. "+
		"Please leave your name, your number and a short message after the tone, and I will get back to you as soon as I can. Thank you, and have a great day.")
	require.Greater(t, len(greeting), 10*8000, "the greeting lasts %d ms", len(greeting)/8)
	box, _ := calleePcap(t, silencePCM(200*time.Millisecond), greeting, silencePCM(600*time.Millisecond), beepPCM(500*time.Millisecond), silencePCM(3*time.Second))
	beepEnd := 200*time.Millisecond + time.Duration(len(greeting))*time.Second/8000 + 1100*time.Millisecond
	d, sipp, _, agentID := outboundSetup(t, callee{Name: "machine", RingMs: 300, Pcap: box}, "+18005550143")

	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550198", "from": "+18005550143",
		"agent_id": agentID, "machine_detection": "detect", "ring_timeout_s": 20}, 201)
	id := rec["call_id"].(string)
	rec = waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["answered_by"] != nil })
	require.Equal(t, "machine", rec["answered_by"])
	det := recordEvents(rec, "progress")
	last := det[len(det)-1]["data"].(map[string]any)
	require.Equal(t, "long_greeting", last["reason"])
	answered, err := time.Parse(time.RFC3339Nano, rec["answered_at"].(string))
	require.NoError(t, err)
	require.Less(t, eventAt(t, det[len(det)-1]).Sub(answered), 4*time.Second, "a machine is known within seconds")
	require.Empty(t, rec["transcript"], "nothing is said to a machine's greeting")

	rec = waitRecord(t, d, id, 30*time.Second, func(r map[string]any) bool { return len(r["transcript"].([]any)) > 0 })
	var open map[string]any
	for _, e := range recordEvents(rec, "event") {
		if e["text"] == "opened" {
			open = e
		}
	}
	require.NotNil(t, open)
	data := open["data"].(map[string]any)
	require.Equal(t, true, data["beep"])
	require.Equal(t, "machine", data["answered_by"])
	require.InDelta(t, beepEnd.Seconds(), eventAt(t, open).Sub(answered).Seconds(), 0.7, "the message starts as the beep ends")
	line := rec["transcript"].([]any)[0].(map[string]any)
	require.Equal(t, "assistant", line["role"])
	require.Contains(t, strings.ToLower(line["text"].(string)), "answering machine", "the model was told, and (the echo engine) says so")

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	sipp.wait(t, 20*time.Second)
	requireNoCalls(t, d)
}

// TestOutboundBusyAndNoAnswer: a callee that answers 486 leaves a busy
// record with its status; one that rings past ring_timeout_s is
// cancelled (CANCEL, its 487) and recorded as no-answer. Neither was
// answered, and the ports are free again.
func TestOutboundBusyAndNoAnswer(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	d := callDaemon(t, nil)
	busyPort, busy := startCallee(t, callee{Name: "busy", Status: 486, Reason: "Busy Here"})
	agentID := outboundNumber(t, d, "+18005550144", busyPort, "", "")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550197", "from": "+18005550144", "agent_id": agentID}, 201)
	rec = waitRecord(t, d, rec["call_id"].(string), 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	busy.wait(t, 10*time.Second)
	require.Equal(t, "busy", rec["progress"])
	require.EqualValues(t, 486, rec["sip_status"])
	require.Equal(t, "callee", rec["ended_by"])
	require.Contains(t, rec["end_reason"], "486")
	require.Nil(t, rec["answered_at"])
	require.Nil(t, rec["answered_by"])

	ringPort, ringing := startCallee(t, callee{Name: "no-answer", NoAnswer: true})
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+numberID(t, d, "+18005550144"), d.OwnerKey,
		map[string]any{"outbound_trunk": map[string]any{"uri": "sip:127.0.0.1:" + itoa(ringPort)}}, 200)
	start := time.Now()
	rec = d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550196", "from": "+18005550144", "agent_id": agentID,
		"ring_timeout_s": 5}, 201)
	rec = waitRecord(t, d, rec["call_id"].(string), 15*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	ringing.wait(t, 10*time.Second)
	require.InDelta(t, 5, time.Since(start).Seconds(), 1.5)
	require.Equal(t, "no-answer", rec["progress"])
	require.EqualValues(t, 487, rec["sip_status"])
	var steps []string
	for _, e := range recordEvents(rec, "progress") {
		steps = append(steps, e["text"].(string))
	}
	require.Equal(t, []string{"ringing", "no-answer"}, steps)
	_, _, metrics := d.Do(t, "GET", "/metrics", "", nil)
	require.Contains(t, string(metrics), `switchboard_outbound_calls_total{progress="busy"} 1`)
	require.Contains(t, string(metrics), `switchboard_outbound_calls_total{progress="no-answer"} 1`)
	requireNoCalls(t, d)
	d.Stop(t)
	requirePortsFree(t, d)
	goleak.VerifyNone(t, ignore)
}

// TestOutboundHangupOnMachine: hangup_on_machine ends the call with a BYE
// as soon as the greeting is known to be a machine's.
func TestOutboundHangupOnMachine(t *testing.T) {
	greeting := espeakPCM(t, "Hello, you have reached Acme Logistics. Our offices are closed. Please leave a message after the tone and we will call you back.")
	box, _ := calleePcap(t, greeting, beepPCM(500*time.Millisecond), silencePCM(2*time.Second))
	d, sipp, _, agentID := outboundSetup(t, callee{Name: "hangup-machine", Pcap: box}, "+18005550145")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550195", "from": "+18005550145",
		"agent_id": agentID, "machine_detection": "hangup_on_machine"}, 201)
	sipp.wait(t, 15*time.Second) // the BYE came
	rec = waitRecord(t, d, rec["call_id"].(string), 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	require.Equal(t, "machine", rec["answered_by"])
	require.Equal(t, "appliance", rec["ended_by"])
	require.Equal(t, "answering machine", rec["end_reason"])
	require.Empty(t, rec["transcript"], "nothing was said to the machine")
	require.Less(t, rec["duration_ms"].(float64), 4000.0)
}

// TestPlaceCallRefusals: every bad request gets its status and the field
// it is about; a team past its calls per second or its calls at once
// gets 429 with Retry-After.
func TestPlaceCallRefusals(t *testing.T) {
	t.Parallel()
	ringPort, ringing := startCallee(t, callee{Name: "limits", NoAnswer: true})
	d := callDaemon(t, map[string]string{"SWITCHBOARD_OUTBOUND_MAX_CONCURRENT": "1", "SWITCHBOARD_OUTBOUND_CALLS_PER_SECOND": "1"})
	agentID := outboundNumber(t, d, "+18005550146", ringPort, "", "")
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "no trunk",
		"phone_number": "+18005550147", "agent_id": agentID}, 200)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "no route",
		"phone_number": "+18005550148", "outbound_trunk": map[string]any{"uri": "sip:127.0.0.1:9"}}, 200)
	ok := map[string]any{"to": "+14155550194", "from": "+18005550146", "agent_id": agentID}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		param  string
	}{
		{"no to", with("to", nil), 400, "to"},
		{"bad to", with("to", "555-0100"), 400, "to"},
		{"sip uri without user", with("to", "sip:127.0.0.1"), 400, "to"},
		{"metadata sip uri", with("to", "sip:a@169.254.169.254"), 400, "to"},
		{"no from", with("from", nil), 400, "from"},
		{"bad from", with("from", "nobody"), 400, "from"},
		{"unknown from", with("from", "+14155550100"), 404, "from"},
		{"unknown agent", with("agent_id", "ag_nope"), 404, "agent_id"},
		{"empty agent", with("agent_id", ""), 400, "agent_id"},
		{"bad detection", with("machine_detection", "maybe"), 400, "machine_detection"},
		{"short ring", with("ring_timeout_s", 2), 400, "ring_timeout_s"},
		{"long ring", with("ring_timeout_s", 600), 400, "ring_timeout_s"},
		{"unknown field", with("callback", "x"), 400, "callback"},
		{"no trunk", with("from", "+18005550147"), 409, "from"},
		{"no route", map[string]any{"to": "+14155550194", "from": "+18005550148"}, 409, "agent_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, raw := d.Do(t, "POST", "/v1/calls", d.OwnerKey, tc.body)
			require.Equal(t, tc.status, status, "%s", raw)
			var e struct {
				Error struct{ Code, Message, Param string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
			require.Equal(t, tc.param, e.Error.Param, "%s", raw)
			require.NotEmpty(t, e.Error.Message)
		})
	}
	require.Zero(t, d.App.Calls().Active(), "no refused request placed a call")

	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, with("ring_timeout_s", 5), 201)
	status, h, raw := d.Do(t, "POST", "/v1/calls", d.OwnerKey, ok)
	require.Equal(t, 429, status, "%s", raw)
	require.NotEmpty(t, h.Get("Retry-After"))
	require.Contains(t, string(raw), "calls_per_second")
	// calls_per_second counts wall-clock seconds in the appliance: asked
	// again until the next one begins (a refusal for the rate takes
	// nothing from it), the call is refused for the call in progress.
	require.Eventually(t, func() bool {
		status, h, raw = d.Do(t, "POST", "/v1/calls", d.OwnerKey, ok)
		return status != 429 || !strings.Contains(string(raw), "calls_per_second")
	}, 5*time.Second, 50*time.Millisecond, "the next second's call")
	require.Equal(t, 429, status, "%s", raw)
	require.Contains(t, string(raw), "too_many_calls")
	require.NotEmpty(t, h.Get("Retry-After"))

	// A key without the calls endpoint is refused.
	k := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "agents only",
		"acls": []string{"api-key:endpoint:agents", "api-key:model:*"}}, 200)
	status, _, _ = d.Do(t, "POST", "/v1/calls", k["apiKey"].(string), ok)
	require.Equal(t, 403, status)

	waitRecord(t, d, rec["call_id"].(string), 15*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	ringing.wait(t, 10*time.Second)
}

// TestOutboundWebhookNumber places a call from a webhook-routed number:
// no realtime.call.incoming goes out; the call is dialed once a
// controller attached with its call_id; the controller sees each step
// (switchboard.call.progress, switchboard.call.opened) and the number's
// webhook gets them signed (realtime.call.progress), then the end.
func TestOutboundWebhookNumber(t *testing.T) {
	t.Parallel()
	hello, _ := calleePcap(t, silencePCM(200*time.Millisecond), espeakPCM(t, "Hello, who is this?"), silencePCM(3*time.Second))
	port, sipp := startCallee(t, callee{Name: "webhook", RingMs: 400, Pcap: hello})
	h := newHookReceiver(t, 0)
	var mu sync.Mutex
	var types []string
	h.onEvent = func(ev hookEvent) {
		mu.Lock()
		types = append(types, ev.Type)
		mu.Unlock()
	}
	d := controlDaemon(t, nil, h, "+18005550149")
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+numberID(t, d, "+18005550149"), d.OwnerKey,
		map[string]any{"outbound_trunk": map[string]any{"uri": "sip:127.0.0.1:" + itoa(port)}}, 200)
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550193", "from": "+18005550149",
		"machine_detection": "detect"}, 201)
	id := rec["call_id"].(string)
	require.True(t, strings.HasPrefix(rec["route"].(string), "webhook:"), rec["route"])
	// No dial may come before a controller: a while passes in which none must.
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, "dialing", d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)["progress"], "no dial before a controller")

	c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	for _, st := range []string{"ringing", "answered"} {
		ev := c.nextWhere(t, "switchboard.call.progress", "status", st, 10*time.Second)
		require.Equal(t, id, ev["call_id"])
	}
	det := c.nextWhere(t, "switchboard.call.progress", "status", "detected", 10*time.Second)
	require.Equal(t, "human", det["answered_by"])
	op := c.next(t, "switchboard.call.opened", 5*time.Second)
	require.Equal(t, "human", op["answered_by"])
	c.next(t, "response.done", 10*time.Second) // the model spoke first

	for _, st := range []string{"ringing", "answered", "detected"} {
		ev := h.next(t, "realtime.call.progress", 10*time.Second)
		require.Equal(t, st, ev.Data["status"])
		require.Equal(t, id, ev.Data["call_id"])
		require.Equal(t, "outbound", ev.Data["direction"])
	}
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	sipp.wait(t, 15*time.Second)
	ended := h.next(t, "realtime.call.ended", 10*time.Second)
	require.Equal(t, id, ended.Data["call_id"])
	require.Equal(t, "controller", ended.Data["ended_by"])
	mu.Lock()
	defer mu.Unlock()
	require.NotContains(t, types, "realtime.call.incoming", "a placed call is not announced as incoming")
}

// TestOutboundCanceledWhileRinging: the hangup endpoint cancels a placed
// call that rings (CANCEL, 487, the CANCEL carrying the hangup's reason as
// its Reason header, RFC 3326): progress canceled, ended by the appliance.
func TestOutboundCanceledWhileRinging(t *testing.T) {
	t.Parallel()
	d, sipp, _, agentID := outboundSetup(t, callee{Name: "cancel", NoAnswer: true,
		CancelReason: `Q\.850;cause=16;text=.Normal call clearing.`}, "+18005550150")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550192", "from": "+18005550150", "agent_id": agentID}, 201)
	id := rec["call_id"].(string)
	waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["progress"] == "ringing" })
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey,
		map[string]any{"reason": `Q.850;cause=16;text="Normal call clearing"`}, 200)
	sipp.wait(t, 10*time.Second)
	rec = waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	require.Equal(t, "canceled", rec["progress"])
	require.Equal(t, "appliance", rec["ended_by"])
	require.EqualValues(t, 487, rec["sip_status"])
	status, _, _ := d.Do(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil)
	require.Equal(t, 409, status, "a second hangup finds the call over")
}

// TestCLICallsDial: `switchboard calls dial` places the call as POST
// /v1/calls does and, with --wait, follows it to its end; a bad request
// exits 1 with the server's message.
func TestCLICallsDial(t *testing.T) {
	port, sipp := startCallee(t, callee{Name: "cli-busy", RingMs: 0, Status: 486, Reason: "Busy Here"})
	d := callDaemon(t, nil)
	agentID := outboundNumber(t, d, "+18005550151", 9, "", "")
	env := []string{"SWITCHBOARD_URL=" + d.URL, "SWITCHBOARD_DATA_DIR=" + d.DataDir, "TZ=UTC"}
	pw := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pw, []byte("Carrier-Pass-77\n"), 0o600))
	_, errs, code := cli(t, env, "numbers", "update", numberID(t, d, "+18005550151"), "--outbound-uri", "sip:127.0.0.1:"+itoa(port),
		"--outbound-username", "acct-9", "--outbound-password-file", pw, "--outbound-caller-id", "+18005550151")
	require.Equal(t, 0, code, errs)
	n := d.JSON(t, "GET", "/v2/phone-numbers/"+numberID(t, d, "+18005550151"), d.OwnerKey, nil, 200)
	require.Equal(t, map[string]any{"uri": "sip:127.0.0.1:" + itoa(port), "auth_username": "acct-9", "caller_id": "+18005550151"}, n["outbound_trunk"])
	out, errs, code := cli(t, env, "calls", "dial", "--to", "+14155550191", "--from", "+18005550151", "--agent", agentID,
		"--machine-detection", "detect", "--wait")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "placed call ")
	require.Contains(t, out, " dialing")
	require.Contains(t, out, " busy")
	require.Contains(t, out, "Dial         busy (SIP 486)")
	require.Contains(t, out, "Direction    outbound")
	sipp.wait(t, 10*time.Second)

	_, errs, code = cli(t, env, "calls", "dial", "--to", "+14155550191", "--from", "+18005550151", "--machine-detection", "maybe")
	require.Equal(t, 1, code)
	require.Contains(t, errs, "machine_detection")
}

// TestOutboundCalleeHangsUp: the callee's BYE, sent to the Contact of the
// appliance's INVITE, reaches the SIP server and ends the placed call;
// the record says the callee ended it, and DTMF sent meanwhile went out
// as RFC 4733 events (the callee's answer had telephone-event).
func TestOutboundCalleeHangsUp(t *testing.T) {
	t.Parallel()
	hello, _ := calleePcap(t, espeakPCM(t, "Yes?"), silencePCM(2*time.Second))
	d, sipp, port, agentID := outboundSetup(t, callee{Name: "callee-bye", Pcap: hello, CalleeBye: true, TalkMs: 4000}, "+18005550152")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "sip:bob@127.0.0.1:" + itoa(port), "from": "+18005550152",
		"agent_id": agentID}, 201)
	id := rec["call_id"].(string)
	require.Equal(t, "bob", rec["to"], "a SIP URI callee is dialed directly; the record has its user part")
	waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["state"] == "active" })
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/dtmf", d.OwnerKey, map[string]any{"digits": "42"}, 200)
	sipp.wait(t, 15*time.Second)
	rec = waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	require.Equal(t, "callee", rec["ended_by"])
	require.Nil(t, rec["answered_by"], "no detection asked")
	var sent bool
	for _, e := range recordEvents(rec, "dtmf") {
		sent = sent || e["text"] == "sent 42"
	}
	require.True(t, sent, "the digits were sent: %v", rec["events"])
	requireNoCalls(t, d)
}

// TestOutboundSilentCallee: a callee who answers and says nothing gets
// the agent after a short silence (2.5 s of silent RTP), and one whose
// phone sends no RTP at all after 4 s; detection says unknown.
func TestOutboundSilentCallee(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		pcap         bool
		at           time.Duration
	}{
		{"silent audio", "initial_silence", true, 2500 * time.Millisecond},
		{"no audio", "no_audio", false, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := callee{Name: "silent", ByeTimeoutMs: 30000}
			if tc.pcap {
				c.Pcap, _ = calleePcap(t, silencePCM(6*time.Second))
			}
			d, sipp, _, agentID := outboundSetup(t, c, "+18005550153")
			rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550190", "from": "+18005550153",
				"agent_id": agentID, "machine_detection": "detect"}, 201)
			id := rec["call_id"].(string)
			rec = waitRecord(t, d, id, 15*time.Second, func(r map[string]any) bool { return len(r["transcript"].([]any)) > 0 })
			require.Equal(t, "unknown", rec["answered_by"])
			var open map[string]any
			for _, e := range recordEvents(rec, "event") {
				if e["text"] == "opened" {
					open = e
				}
			}
			require.NotNil(t, open)
			require.Equal(t, tc.reason, open["data"].(map[string]any)["reason"])
			answered, err := time.Parse(time.RFC3339Nano, rec["answered_at"].(string))
			require.NoError(t, err)
			require.InDelta(t, tc.at.Seconds(), eventAt(t, open).Sub(answered).Seconds(), 0.6)
			require.Contains(t, rec["transcript"].([]any)[0].(map[string]any)["text"], "Acme calling", "the agent greets")
			d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
			sipp.wait(t, 15*time.Second)
		})
	}
}

// TestOutboundToAnotherAppliance: one appliance places a call through a
// trunk that is another appliance whose number asks for digest
// credentials with 407 (Proxy-Authenticate): the first answers the
// challenge with the trunk's credentials and the second checks them, so
// both sides of the call are real.
func TestOutboundToAnotherAppliance(t *testing.T) {
	t.Parallel()
	callee := callDaemon(t, map[string]string{"SWITCHBOARD_SIP_CHALLENGE_STATUS": "407"})
	createAgentNumber(t, callee, "+18005550160", map[string]any{"auth_username": "trunk-a", "auth_password": "Trunk-A-secret-7"})
	caller := callDaemon(t, nil)
	agentID := outboundNumber(t, caller, "+18005550161", int(callee.App.SIPAddr().Port()), "trunk-a", "Trunk-A-secret-7")

	rec := caller.JSON(t, "POST", "/v1/calls", caller.OwnerKey, map[string]any{"to": "+18005550160", "from": "+18005550161",
		"agent_id": agentID}, 201)
	id := rec["call_id"].(string)
	rec = waitRecord(t, caller, id, 15*time.Second, func(r map[string]any) bool { return r["state"] == "active" })
	require.Equal(t, "answered", rec["progress"])
	require.EqualValues(t, 200, rec["sip_status"])

	// The callee appliance took it as an inbound call from the caller id.
	var in map[string]any
	require.Eventually(t, func() bool {
		list := callee.JSON(t, "GET", "/v1/calls?state=active", callee.OwnerKey, nil, 200)
		calls := list["calls"].([]any)
		if len(calls) != 1 {
			return false
		}
		in = calls[0].(map[string]any)
		return true
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "inbound", in["direction"])
	require.Equal(t, "+18005550161", in["from"])
	require.Equal(t, "+18005550160", in["to"])
	_, _, metrics := callee.Do(t, "GET", "/metrics", "", nil)
	require.Contains(t, string(metrics), `switchboard_sip_invites_total{result="challenged"} 1`, "the INVITE was challenged (407) first")
	require.Contains(t, string(metrics), `switchboard_sip_invites_total{result="accepted"} 1`)

	caller.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", caller.OwnerKey, nil, 200)
	waitRecord(t, callee, in["call_id"].(string), 10*time.Second, func(r map[string]any) bool {
		return r["state"] == "ended" && r["ended_by"] == "caller"
	})
	requireNoCalls(t, caller)
	requireNoCalls(t, callee)
}

// TestOutboundTransfer: call control transfers a placed call (REFER to
// the callee, whose NOTIFY says the transfer succeeded); the appliance
// then ends its leg with BYE.
func TestOutboundTransfer(t *testing.T) {
	t.Parallel()
	d, sipp, _, agentID := outboundSetup(t, callee{Name: "refer", Refer: true}, "+18005550154")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550189", "from": "+18005550154", "agent_id": agentID}, 201)
	id := rec["call_id"].(string)
	waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["state"] == "active" })
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/refer", d.OwnerKey, map[string]any{"target_uri": "tel:+14155550100"}, 200)
	sipp.wait(t, 15*time.Second)
	rec = waitRecord(t, d, id, 10*time.Second, func(r map[string]any) bool { return r["state"] == "ended" })
	var steps []string
	for _, e := range recordEvents(rec, "transfer") {
		steps = append(steps, e["text"].(string))
	}
	require.Equal(t, []string{"accepted", "completed"}, steps)
	require.Equal(t, "appliance", rec["ended_by"])
}

// TestOutboundMachineWithoutDetection: with machine_detection off there
// is no verdict, but the agent still waits for the end of the greeting:
// its first words come after the beep, not over the machine.
func TestOutboundMachineWithoutDetection(t *testing.T) {
	greeting := espeakPCM(t, "You have reached the desk of Jordan Lee. I am away from the office until Monday. "+
		"For urgent matters please call the front desk. Otherwise leave a message after the tone.")
	box, _ := calleePcap(t, greeting, silencePCM(400*time.Millisecond), beepPCM(400*time.Millisecond), silencePCM(3*time.Second))
	beepEnd := time.Duration(len(greeting))*time.Second/8000 + 800*time.Millisecond
	d, sipp, _, agentID := outboundSetup(t, callee{Name: "machine-off", Pcap: box}, "+18005550155")
	rec := d.JSON(t, "POST", "/v1/calls", d.OwnerKey, map[string]any{"to": "+14155550188", "from": "+18005550155", "agent_id": agentID}, 201)
	id := rec["call_id"].(string)
	rec = waitRecord(t, d, id, 30*time.Second, func(r map[string]any) bool { return len(r["transcript"].([]any)) > 0 })
	require.Equal(t, "off", rec["machine_detection"])
	require.Nil(t, rec["answered_by"])
	var open map[string]any
	for _, e := range recordEvents(rec, "event") {
		if e["text"] == "opened" {
			open = e
		}
	}
	require.NotNil(t, open)
	require.Equal(t, "beep", open["data"].(map[string]any)["reason"])
	answered, err := time.Parse(time.RFC3339Nano, rec["answered_at"].(string))
	require.NoError(t, err)
	require.InDelta(t, beepEnd.Seconds(), eventAt(t, open).Sub(answered).Seconds(), 0.7)
	require.Contains(t, rec["transcript"].([]any)[0].(map[string]any)["text"], "Acme calling", "the agent's greeting, after the beep")
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	sipp.wait(t, 15*time.Second)
}
