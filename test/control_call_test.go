package test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/call"
)

// TestControlCallRefer is the whole webhook flow: sipp calls a webhook
// number, the receiver gets a signed realtime.call.incoming, a controller
// attaches with the call_id and configures the session, the call is
// answered and audio flows, then the refer endpoint transfers the call
// and our leg ends.
func TestControlCallRefer(t *testing.T) {
	t.Parallel()
	const number = "+14155550142"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s"}, h, number)
	run := startSipp(t, d, number, sippControl{Mode: "refer", Audio: true, ReferTo: "sip:operator@example.com",
		NotifyStatus: "200 OK", ByeReason: "transferred"}, 1, 1)

	in := h.next(t, "realtime.call.incoming", 5*time.Second)
	require.Equal(t, "Bearer receiver-token", in.Header.Get("Authorization"))
	id, _ := in.Data["call_id"].(string)
	require.NotEmpty(t, id)
	require.Equal(t, "+15550001111", in.Data["from"])
	require.Equal(t, number, in.Data["to"])
	require.NotEmpty(t, in.Data["phone_number_id"])
	names := map[string]string{}
	for _, x := range in.Data["sip_headers"].([]any) {
		m := x.(map[string]any)
		names[m["name"].(string)] = m["value"].(string)
	}
	require.Contains(t, names["P-Asserted-Identity"], "+15550001111")
	require.Contains(t, names["Diversion"], "+15559990000")
	require.NotEmpty(t, names["Call-ID"])

	// Ringing: call control is refused until answer.
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/refer", d.OwnerKey, map[string]any{"target_uri": "sip:x@example.com"}, 409)
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 409)
	d.JSON(t, "POST", "/v1/realtime/calls/nope/hangup", d.OwnerKey, nil, 404)

	// A client secret may not open a session with call_id: refused
	// before the upgrade, bearer or subprotocol.
	sec := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{}, 200)
	value := sec["value"].(string)
	_, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(value))
	require.Equal(t, http.StatusForbidden, status, "%s", body)
	require.Contains(t, string(body), `"permission_denied"`)
	_, status, _ = dialController(t, wsURL(d, "?call_id="+id), http.Header{"Sec-Websocket-Protocol": {"realtime, svc-client-secret." + value}})
	require.Equal(t, http.StatusForbidden, status)
	_, status, _ = dialController(t, wsURL(d, "?call_id=unknown"), bearer(d.OwnerKey))
	require.Equal(t, http.StatusNotFound, status)

	c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	created := c.next(t, "session.created", 2*time.Second)
	require.Equal(t, "session.created", c.seen()[0], "the session starts with session.created")
	// As complete as a direct session's: the model session's own.
	sess := created["session"].(map[string]any)
	for _, k := range []string{"id", "object", "model", "instructions", "audio", "tools", "tool_choice", "output_modalities", "voice", "turn_detection"} {
		require.Contains(t, sess, k, "session.created holds %s", k)
	}
	require.Equal(t, "realtime.session", sess["object"])
	require.Equal(t, "eve", sess["voice"], "the spec's default voice")
	require.Equal(t, sess["voice"], sess["audio"].(map[string]any)["output"].(map[string]any)["voice"])
	conv := c.next(t, "conversation.created", 5*time.Second)["conversation"].(map[string]any)["id"]
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "You take calls for the test."}})
	upd := c.next(t, "session.updated", 5*time.Second)
	require.Equal(t, "You take calls for the test.", upd["session"].(map[string]any)["instructions"])
	c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)

	// Only one controller at a time.
	_, status, _ = dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, http.StatusConflict, status)

	// Audio flows: the echo engine hears the caller (sipp plays a
	// recording); its audio goes to the phone, never to the controller.
	c.next(t, "input_audio_buffer.speech_started", 8*time.Second)
	answer := c.next(t, "response.created", 8*time.Second)["response"].(map[string]any)
	require.Equal(t, conv, answer["conversation_id"], "the one conversation.created names the conversation responses belong to")

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/refer", d.OwnerKey, map[string]any{"target_uri": "operator@example.com"}, 400)
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/refer", d.OwnerKey, map[string]any{"target_uri": "tel:12"}, 400)
	d.JSON(t, "POST", "/v1/realtime/calls/unknown/refer", d.OwnerKey, map[string]any{"target_uri": "tel:+15550002222"}, 404)
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/dtmf", d.OwnerKey, map[string]any{"digits": "12x"}, 400)
	// As README's curl example sends it: -d without a JSON content type
	// (curl says application/x-www-form-urlencoded).
	req, err := http.NewRequest("POST", d.URL+"/v1/realtime/calls/"+id+"/dtmf", strings.NewReader(`{"digits":"12#"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+d.OwnerKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := d.Client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	live, ok := d.App.Calls().Get(id)
	require.True(t, ok)
	require.True(t, hasNote(live.Snapshot(), call.NoteDTMF, "sent 12#"))

	start := time.Now()
	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/refer", d.OwnerKey, map[string]any{"target_uri": "sip:operator@example.com"}, 200)
	t.Logf("refer answered after %s", time.Since(start))
	acc := c.nextWhere(t, "switchboard.call.transfer", "status", "accepted", 2*time.Second)
	require.EqualValues(t, 202, acc["sip_status"])
	c.nextWhere(t, "switchboard.call.transfer", "status", "completed", 5*time.Second)
	c.nextWhere(t, "switchboard.call.state", "state", "ended", 5*time.Second)
	ce := c.waitClosed(t, 5*time.Second)
	require.NotNil(t, ce)
	require.Contains(t, ce.Text, "transferred")
	run.wait(t, 10*time.Second)
	opened := map[string]int{}
	for _, typ := range c.seen() {
		require.NotEqual(t, "response.output_audio.delta", typ, "the controller never gets the phone's audio")
		opened[typ]++
	}
	require.Equal(t, 1, opened["session.created"])
	require.Equal(t, 1, opened["conversation.created"])

	tr := h.next(t, "realtime.call.transfer", 5*time.Second)
	require.Equal(t, "accepted", tr.Data["status"])
	tr = h.next(t, "realtime.call.transfer", 5*time.Second)
	require.Equal(t, "completed", tr.Data["status"])
	end := h.next(t, "realtime.call.ended", 5*time.Second)
	require.Equal(t, id, end.Data["call_id"])
	require.Equal(t, "controller", end.Data["ended_by"])
}

func hasNote(s call.Snapshot, kind, text string) bool {
	for _, n := range s.Notes {
		if n.Kind == kind && strings.Contains(n.Text, text) {
			return true
		}
	}
	return false
}

// TestControlHangupAndGrace: the hangup endpoint ends a call with BYE and
// its Reason; a controller that drops leaves the call running for the
// grace, then the call ends.
func TestControlHangupAndGrace(t *testing.T) {
	t.Parallel()
	const number = "+14155550143"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s", "SWITCHBOARD_CONTROLLER_GRACE": "1500ms"}, h, number)

	t.Run("hangup", func(t *testing.T) {
		run := startSipp(t, d, number, sippControl{ByeReason: "hung up by the API"}, 1, 1)
		id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
		c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
		require.Equal(t, 101, status, "%s", body)
		c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)
		d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
		ce := c.waitClosed(t, 5*time.Second)
		require.NotNil(t, ce)
		require.Contains(t, ce.Text, "hung up by the API")
		run.wait(t, 10*time.Second)
		end := h.next(t, "realtime.call.ended", 5*time.Second)
		require.Equal(t, "controller", end.Data["ended_by"])
		// A second hangup: the call is over (409, as for a call that is
		// ending), not unknown.
		require.Eventually(t, func() bool {
			st, _, _ := d.Do(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil)
			return st == 409
		}, 5*time.Second, 50*time.Millisecond)
		d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/dtmf", d.OwnerKey, map[string]any{"digits": "1"}, 409)
		d.JSON(t, "POST", "/v1/realtime/calls/unknown-call/hangup", d.OwnerKey, nil, 404)
	})

	t.Run("failed transfer", func(t *testing.T) {
		run := startSipp(t, d, number, sippControl{Mode: "refer", ReferTo: "tel:\\+15550002222", NotifyStatus: "486 Busy Here",
			ByeReason: "hung up by the API"}, 1, 1)
		id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
		c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
		require.Equal(t, 101, status, "%s", body)
		c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)
		d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/refer", d.OwnerKey, map[string]any{"target_uri": "tel:+15550002222"}, 200)
		failed := c.nextWhere(t, "switchboard.call.transfer", "status", "failed", 5*time.Second)
		require.EqualValues(t, 486, failed["sip_status"])
		// The model is told (a system message, then a response).
		c.next(t, "response.created", 5*time.Second)
		live, ok := d.App.Calls().Get(id)
		require.True(t, ok, "a failed transfer keeps the call")
		require.Equal(t, call.StateActive, live.Snapshot().State)
		require.True(t, hasNote(live.Snapshot(), call.NoteTransfer, "failed"))
		d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
		run.wait(t, 10*time.Second)
		require.Equal(t, "accepted", h.next(t, "realtime.call.transfer", 5*time.Second).Data["status"])
		tr := h.next(t, "realtime.call.transfer", 5*time.Second)
		require.Equal(t, "failed", tr.Data["status"])
		require.EqualValues(t, 486, tr.Data["sip_status"])
	})

	t.Run("grace", func(t *testing.T) {
		run := startSipp(t, d, number, sippControl{ByeReason: "controller gone"}, 1, 1)
		id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
		c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
		require.Equal(t, 101, status, "%s", body)
		c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)
		const detached = "controller detached: the call goes on"
		before := strings.Count(d.Logs.String(), detached)
		require.NoError(t, c.conn.Close())
		dropped := time.Now()

		// Within the grace the call goes on and a controller may come
		// back; it gets session.created with the configuration so far.
		require.Eventually(t, func() bool { return strings.Count(d.Logs.String(), detached) > before }, 5*time.Second, 5*time.Millisecond,
			"the call notices its controller left")
		live, ok := d.App.Calls().Get(id)
		require.True(t, ok)
		require.Equal(t, call.StateActive, live.Snapshot().State)
		c2, status, _ := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
		require.Equal(t, 101, status)
		c2.next(t, "session.created", 2*time.Second)
		c2.send(t, map[string]any{"type": "session.update", "session": map[string]any{"instructions": "kept"}})
		c2.next(t, "session.updated", 5*time.Second)
		require.NoError(t, c2.conn.Close())
		redropped := time.Now()

		run.wait(t, 10*time.Second)
		gone := time.Since(redropped)
		require.GreaterOrEqual(t, gone, 1400*time.Millisecond, "the call outlived the controller by the grace")
		t.Logf("call ended %s after the controller dropped (%s after the first drop)", gone, time.Since(dropped))
		end := h.next(t, "realtime.call.ended", 5*time.Second)
		require.Equal(t, "system", end.Data["ended_by"])
	})
}

// TestControlNoController: nobody attaches within the ring timeout, so
// the caller gets 480; the receiver failed twice, and every attempt (same
// webhook-id) is in the call record.
func TestControlNoController(t *testing.T) {
	t.Parallel()
	const number = "+14155550144"
	h := newHookReceiver(t, 2)
	ids := make(chan string, 8)
	h.onEvent = func(ev hookEvent) {
		if ev.Type == "realtime.call.incoming" {
			ids <- ev.Header.Get("webhook-id")
		}
	}
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "2500ms"}, h, number)
	run := startSipp(t, d, number, sippControl{Mode: "480"}, 1, 1)
	in := h.next(t, "realtime.call.incoming", 5*time.Second)
	id := in.Data["call_id"].(string)
	require.Equal(t, in.ID, <-ids)
	require.Equal(t, in.ID, <-ids)
	require.Equal(t, in.ID, <-ids)

	var notes []call.Note
	require.Eventually(t, func() bool {
		live, ok := d.App.Calls().Get(id)
		if !ok {
			return false
		}
		notes = nil
		for _, n := range live.Snapshot().Notes {
			if n.Kind == call.NoteWebhook {
				notes = append(notes, n)
			}
		}
		return len(notes) == 3
	}, 2*time.Second, 20*time.Millisecond)
	raw, _ := json.Marshal(notes)
	require.Contains(t, string(raw), `"status":503`)
	require.Contains(t, string(raw), `"status":204`)
	run.wait(t, 10*time.Second)
	end := h.next(t, "realtime.call.ended", 5*time.Second)
	require.Equal(t, "system", end.Data["ended_by"])
}
