package test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// webrtcDaemon starts an appliance whose browser calls use a port range
// of their own.
func webrtcDaemon(t *testing.T) *apptest.Daemon {
	t.Helper()
	// The echo engine repeats whole sentences (it keeps 10 s of a turn by
	// default): the tests compare what the browser said with what it hears
	// back.
	return apptest.Start(t, apptest.Config(t, t.TempDir(), withDrain(map[string]string{"SWITCHBOARD_RTP_PORTS": takePorts(t, 20).String(),
		"SWITCHBOARD_WEBRTC_PORTS": takePorts(t, 100).String()})))
}

var callLocation = regexp.MustCompile(`^/v1/realtime/calls/[0-9a-f-]{36}$`)

// TestWebRTCAgentEcho: a WebRTC peer (pion, standing in for a browser)
// calls the demo agent through POST /v1/realtime/calls, hears the
// greeting, speaks a sentence and hears it back from the echo engine;
// the data channel carries the agent's events; the call is a call like
// any other (live list, record with channel webrtc).
func TestWebRTCAgentEcho(t *testing.T) {
	for _, tc := range []struct {
		name string
		opus bool
	}{{"opus", true}, {"pcmu", false}} {
		t.Run(tc.name, func(t *testing.T) {
			d := webrtcDaemon(t)
			agentID := demoAgentID(t, d)
			said := speechPCM24k(t, "Hello switchboard. This is a browser calling the echo line. One, two, three.")
			p := newBrowserPeer(t, tc.opus)
			status, h, body := p.call(d, "?agent_id="+agentID, d.OwnerKey)
			require.Equal(t, http.StatusCreated, status, body)
			require.Equal(t, "application/sdp", h.Get("Content-Type"))
			loc := h.Get("Location")
			require.Regexp(t, callLocation, loc)
			callID := loc[strings.LastIndex(loc, "/")+1:]
			if tc.opus {
				require.Contains(t, body, "opus/48000")
				require.NotContains(t, body, "PCMU/8000")
			} else {
				require.Contains(t, body, "PCMU/8000")
			}
			require.Contains(t, body, "a=fingerprint:", "DTLS-SRTP")
			select {
			case <-p.connected:
			case <-time.After(10 * time.Second):
				t.Fatal("ICE/DTLS did not connect")
			}
			<-p.dcOpen
			created := p.nextEvent("session.created", 5*time.Second)
			require.NotEmpty(t, created["session"])

			live := d.JSON(t, "GET", "/v1/calls/"+callID, d.OwnerKey, nil, 200)
			require.Equal(t, "webrtc", live["channel"])
			require.Equal(t, "agent:"+agentID, live["route"])

			p.waitPlayed(700*time.Millisecond, 15*time.Second) // the greeting plays first
			start := len(p.heardPCM())
			p.speak(said)
			p.speak(make([]int16, 24000*6)) // silence: the turn ends, the echo plays
			p.nextEvent("input_audio_buffer.speech_started", time.Second)
			heard := p.heardPCM()[start:]
			ref, got := to8k(said), to8k(heard)
			env := envelope(got, 2000)
			t.Logf("heard envelope (250 ms blocks): %.0f", env)
			windows, matched, median := echoWindows(ref, got, 0, 10*8000, 0.7)
			rev := make([]int16, len(ref))
			for i, v := range ref {
				rev[len(ref)-1-i] = v
			}
			ctlWindows, ctlMatched, _ := echoWindows(rev, got, 0, 10*8000, 0.7)
			t.Logf("%s: %d/%d speech windows heard back, median lag %d ms; control %d/%d", tc.name, matched, windows, median/8, ctlMatched, ctlWindows)
			require.GreaterOrEqual(t, float64(matched), 0.6*float64(windows), "the browser hears its own speech back")
			require.LessOrEqual(t, float64(ctlMatched), 0.2*float64(ctlWindows), "reversed speech must not match")

			require.NoError(t, p.pc.Close())
			require.Eventually(t, func() bool {
				st, _, raw := d.Do(t, "GET", "/v1/calls/"+callID, d.OwnerKey, nil)
				return st == 200 && strings.Contains(string(raw), `"state":"ended"`)
			}, 15*time.Second, 100*time.Millisecond)
			rec := d.JSON(t, "GET", "/v1/calls/"+callID, d.OwnerKey, nil, 200)
			require.Equal(t, "webrtc", rec["channel"])
			media := rec["media"].(map[string]any)
			require.Greater(t, media["packets_in"].(float64), 100.0)
			require.Greater(t, media["packets_out"].(float64), 100.0)
			t.Logf("%s: record media %v", tc.name, media)
			// The call's health sees a browser leg as it sees a phone.
			require.Greater(t, media["first_audio_ms"].(float64), 0.0, "answer to the first audio")
			require.GreaterOrEqual(t, media["turn_latency"].(map[string]any)["count"].(float64), 1.0, "the echo's turn was timed")
			_, _, metrics := d.Do(t, "GET", "/metrics", "", nil)
			require.Contains(t, string(metrics), `switchboard_webrtc_offers_total{result="answered"} 1`)
			require.Contains(t, string(metrics), `switchboard_webrtc_connect_seconds_count{codec="`)
			require.Contains(t, string(metrics), `switchboard_calls_answered_total 1`, "the call metrics count browser calls")
		})
	}
}

// TestWebRTCDirectSession: with a client secret (no agent), the browser's
// data channel steers its own session, as the Agents SDK's WebRTC
// transport does: session.update is acknowledged by session.updated, and
// the audio comes back from the echo engine.
func TestWebRTCDirectSession(t *testing.T) {
	d := webrtcDaemon(t)
	cs := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{"session": map[string]any{"type": "realtime", "model": "svc-voice-latest"}}, 200)
	secret := cs["value"].(string)
	p := newBrowserPeer(t, true)
	status, h, body := p.call(d, "", secret)
	require.Equal(t, http.StatusCreated, status, body)
	require.Regexp(t, callLocation, h.Get("Location"))
	<-p.dcOpen
	p.nextEvent("session.created", 5*time.Second)
	p.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "Be brief."}})
	upd := p.nextEvent("session.updated", 5*time.Second)
	require.Equal(t, "Be brief.", upd["session"].(map[string]any)["instructions"])
	said := speechPCM24k(t, "Testing the direct session. Four, five, six.")
	p.speak(said)
	p.speak(make([]int16, 24000*3))
	_, envCorr, _ := echoMatch(to8k(said), to8k(p.heardPCM()), 0, 8000*len(said)/24000+3*8000)
	require.Greater(t, envCorr, 0.8)
	p.send(map[string]any{"type": "no.such.event"})
	p.nextEvent("error", 3*time.Second)
	// The secret is bound to its session's model: the page cannot switch.
	p.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "model": "svc-voice-fast-1.0"}})
	e := p.nextEvent("error", 3*time.Second)
	require.Equal(t, "permission_denied", e["error"].(map[string]any)["code"])
	// Call control: no REFER nor keypad on a browser; hangup ends it.
	callID := h.Get("Location")[len("/v1/realtime/calls/"):]
	st, _, raw := d.Do(t, "POST", "/v1/realtime/calls/"+callID+"/dtmf", d.OwnerKey, map[string]any{"digits": "12"})
	require.Equal(t, http.StatusConflict, st, "%s", raw)
	st, _, raw = d.Do(t, "POST", "/v1/realtime/calls/"+callID+"/refer", d.OwnerKey, map[string]any{"target_uri": "tel:+14155550100"})
	require.Equal(t, http.StatusConflict, st, "%s", raw)
	d.JSON(t, "POST", "/v1/realtime/calls/"+callID+"/hangup", d.OwnerKey, nil, 200)
	require.Eventually(t, func() bool {
		s := p.pc.ConnectionState()
		return s == webrtc.PeerConnectionStateClosed || s == webrtc.PeerConnectionStateFailed || s == webrtc.PeerConnectionStateDisconnected
	}, 10*time.Second, 50*time.Millisecond, "the browser sees the call end")
	// The browser may see the close before the call's teardown stores the end.
	require.Eventually(t, func() bool {
		return d.JSON(t, "GET", "/v1/calls/"+callID, d.OwnerKey, nil, 200)["state"] == "ended"
	}, 5*time.Second, 50*time.Millisecond, "the call's record says it ended")
}

// TestWebRTCRefusals: every bad request gets a JSON error and no call.
func TestWebRTCRefusals(t *testing.T) {
	d := webrtcDaemon(t)
	agentID := demoAgentID(t, d)
	post := func(query, token, ctype, body string) (int, http.Header, []byte) {
		req, err := http.NewRequest("POST", d.URL+"/v1/realtime/calls"+query, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", ctype)
		return doRaw(t, req)
	}
	offer := newBrowserPeer(t, true).offer()
	for _, tc := range []struct {
		name, query, token, ctype, body string
		status                          int
		code                            string
	}{
		{"no token", "?agent_id=" + agentID, "", "application/sdp", offer, 401, "unauthenticated"},
		{"bad key", "?agent_id=" + agentID, "sk-nope", "application/sdp", offer, 401, "unauthenticated"},
		{"json body", "?agent_id=" + agentID, d.OwnerKey, "application/json", offer, 415, "unsupported_media_type"},
		{"not sdp", "?agent_id=" + agentID, d.OwnerKey, "application/sdp", "hello", 400, "invalid_request"},
		{"no audio", "?agent_id=" + agentID, d.OwnerKey, "application/sdp", "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n", 400, "invalid_request"},
		{"unknown agent", "?agent_id=ag_nope", d.OwnerKey, "application/sdp", offer, 404, "not_found"},
		{"agent and model", "?agent_id=" + agentID + "&model=x", d.OwnerKey, "application/sdp", offer, 400, "invalid_request"},
		{"unknown number", "?phone_number_id=pn_nope", d.OwnerKey, "application/sdp", offer, 404, "not_found"},
		{"agent and number", "?agent_id=" + agentID + "&phone_number_id=pn_x", d.OwnerKey, "application/sdp", offer, 400, "invalid_request"},
		{"unknown model", "?model=no-such-model", d.OwnerKey, "application/sdp", offer, 400, "model_not_found"},
		{"huge", "?agent_id=" + agentID, d.OwnerKey, "application/sdp", strings.Repeat("a=x\r\n", 20000), 413, "too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, raw := post(tc.query, tc.token, tc.ctype, tc.body)
			require.Equal(t, tc.status, status, "%s", raw)
			code, _, _ := apptest.ErrorOf(t, raw)
			require.Equal(t, tc.code, code)
		})
	}
	require.Zero(t, d.App.Calls().Active(), "no call was left behind")
	_, _, metrics := d.Do(t, "GET", "/metrics", "", nil)
	require.Contains(t, string(metrics), `switchboard_webrtc_offers_total{result="bad_offer"} 2`)
}

// TestCORS: a page on another origin may call the API with a bearer
// token: the preflight is answered for any origin, and the response
// exposes Location.
func TestCORS(t *testing.T) {
	d := webrtcDaemon(t)
	req, err := http.NewRequest("OPTIONS", d.URL+"/v1/realtime/calls", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-openai-agents-sdk")
	status, h, _ := doRaw(t, req)
	require.Equal(t, http.StatusNoContent, status)
	require.Equal(t, "*", h.Get("Access-Control-Allow-Origin"))
	require.Contains(t, h.Get("Access-Control-Allow-Methods"), "POST")
	require.Equal(t, "authorization, content-type, x-openai-agents-sdk", h.Get("Access-Control-Allow-Headers"))
	require.Empty(t, h.Get("Access-Control-Allow-Credentials"))

	req, err = http.NewRequest("GET", d.URL+"/v1/agents", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Authorization", "Bearer "+d.OwnerKey)
	status, h, _ = doRaw(t, req)
	require.Equal(t, 200, status)
	require.Equal(t, "*", h.Get("Access-Control-Allow-Origin"))
	require.Contains(t, h.Get("Access-Control-Expose-Headers"), "Location")
}

func doRaw(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, resp.Header, []byte(b.String())
}

// TestLiveCallsStream: GET /v1/calls/live pushes the team's calls in
// progress as Server-Sent Events, a new event when something changes; it
// needs the calls endpoint.
func TestLiveCallsStream(t *testing.T) {
	d := webrtcDaemon(t)
	status, _, _ := d.Do(t, "GET", "/v1/calls/live", "", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	req, err := http.NewRequest("GET", d.URL+"/v1/calls/live", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+d.OwnerKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- l
			}
		}
	}()
	next := func() map[string]any {
		select {
		case l := <-events:
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m))
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
			return nil
		}
	}
	require.Empty(t, next()["calls"], "nothing in progress")
	p := newBrowserPeer(t, true)
	st, _, body := p.call(d, "?agent_id="+demoAgentID(t, d), d.OwnerKey)
	require.Equal(t, http.StatusCreated, st, body)
	for {
		calls := next()["calls"].([]any)
		if len(calls) == 1 && calls[0].(map[string]any)["state"] == "active" {
			require.Equal(t, "webrtc", calls[0].(map[string]any)["channel"])
			break
		}
	}
	require.NoError(t, p.pc.Close())
	for len(next()["calls"].([]any)) != 0 {
	}
}

// TestWebRTCWebhookNumber: a browser call to a webhook-routed number
// (?phone_number_id=) is announced to the webhook like a phone call; the
// controller attached with call_id steers it and the browser hears the
// model; the browser's data channel does not steer it.
func TestWebRTCWebhookNumber(t *testing.T) {
	h := newHookReceiver(t, 0)
	// The echo engine repeats the whole sentence (it keeps 10 s of a turn
	// by default).
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RTP_PORTS": takePorts(t, 20).String(), "SWITCHBOARD_WEBRTC_PORTS": takePorts(t, 100).String()}, h, "+14155550111")
	nums := d.JSON(t, "GET", "/v2/phone-numbers", d.OwnerKey, nil, 200)["phone_numbers"].([]any)
	var numberID string
	for _, n := range nums {
		if m := n.(map[string]any); m["phone_number"] == "+14155550111" {
			numberID = m["phone_number_id"].(string)
		}
	}
	require.NotEmpty(t, numberID)
	p := newBrowserPeer(t, true)
	type answer struct {
		status int
		h      http.Header
		body   string
	}
	answered := make(chan answer, 1)
	go func() {
		st, hd, b := p.call(d, "?phone_number_id="+numberID, d.OwnerKey)
		answered <- answer{st, hd, b}
	}()
	ev := h.next(t, "realtime.call.incoming", 10*time.Second)
	callID := ev.Data["call_id"].(string)
	c, status, raw := dialController(t, wsURL(d, "?call_id="+callID), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", raw)
	c.next(t, "session.created", 5*time.Second)
	a := <-answered
	require.Equal(t, http.StatusCreated, a.status, a.body)
	require.Equal(t, "/v1/realtime/calls/"+callID, a.h.Get("Location"))
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "instructions": "Repeat."}})
	c.next(t, "session.updated", 5*time.Second)
	<-p.dcOpen
	p.send(map[string]any{"type": "response.create"})
	e := p.nextEvent("error", 5*time.Second)
	require.Equal(t, "no_session", e["error"].(map[string]any)["code"], "the webhook's controller steers, not the browser")
	said := speechPCM24k(t, "The webhook controls this browser call. Seven, eight, nine.")
	p.speak(said)
	p.speak(make([]int16, 24000*5))
	c.next(t, "input_audio_buffer.speech_started", time.Second)
	windows, matched, _ := echoWindows(to8k(said), to8k(p.heardPCM()), 0, 12*8000, 0.7)
	require.GreaterOrEqual(t, float64(matched), 0.6*float64(windows), "the browser hears the model")
	rec := d.JSON(t, "GET", "/v1/calls/"+callID, d.OwnerKey, nil, 200)
	require.Equal(t, "webrtc", rec["channel"])
	require.Equal(t, "+14155550111", rec["phone_number"])
	require.Contains(t, rec["route"], "webhook:")
}
