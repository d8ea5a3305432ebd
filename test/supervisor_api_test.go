package test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/auth"
	"switchboard/store"
)

// supervise POSTs the peer's offer to /v1/calls/{id}/{mode} at base with
// key and applies the answer; it returns the status, headers and body.
func (p *browserPeer) supervise(base, id, mode, key string) (int, http.Header, string) {
	p.t.Helper()
	return postOffer(p.t, base+"/v1/calls/"+id+"/"+mode, key, "application/sdp", p.offer(), p.pc)
}

// postOffer POSTs body as ctype to url with key; a 201's body is applied
// to pc as the SDP answer (pc nil: not applied).
func postOffer(t *testing.T, url, key, ctype, body string, pc *webrtc.PeerConnection) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusCreated && pc != nil {
		require.NoError(t, pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(raw)}))
	}
	return resp.StatusCode, resp.Header, string(raw)
}

// otherTeamKey puts a calls key of a team "other" in the daemon's store
// (the API creates keys of the caller's own team only) and returns its
// secret.
func otherTeamKey(t *testing.T, d *apptest.Daemon) string {
	t.Helper()
	const secret = "sk-other-team-supervisor-test-0123456789"
	now := time.Now().UTC()
	require.NoError(t, d.App.Store().Keys().Create(context.Background(), &store.APIKey{ID: "key_other_team", TeamID: "other",
		UserID: "other", Name: "other team", Hash: auth.HashKey(secret), Redacted: auth.Redact(secret),
		ACLs: []string{"api-key:endpoint:calls", "api-key:model:*"}, CreateTime: now, ModifyTime: now}))
	return secret
}

// requireAPIError checks an error answer: its status and the JSON shape
// naming param.
func requireAPIError(t *testing.T, status int, body string, wantStatus int, wantParam string) {
	t.Helper()
	require.Equal(t, wantStatus, status, body)
	_, param, msg := apptest.ErrorOf(t, []byte(body))
	require.NotEmpty(t, msg, body)
	require.Equal(t, wantParam, param, body)
}

// TestSupervisorAPI: the listen and takeover endpoints on a webhook-routed
// call steered by a controller (sipp as the caller, pion as the
// supervisors' browsers). Bad requests get the API's errors (wrong type,
// a bad offer, an unknown call, a key without the calls permission, a
// call of another team); a listener joins; a takeover ends the
// controller's socket with its reason, a second takeover and a new
// controller are refused (409); the hangup endpoint still hangs the call
// up (sipp checks the BYE's Reason), the webhook hears of the call's end
// once, and the record lists the supervisors. Once the call is over, 409.
func TestSupervisorAPI(t *testing.T) {
	const number = "+14155550189"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RTP_PORTS": takePorts(t, 20).String(), "SWITCHBOARD_WEBRTC_PORTS": takePorts(t, 50).String(),
		"SWITCHBOARD_WEBRTC_CONNECT_TIMEOUT": "2s"}, h, number)
	realtimeOnly := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "no calls",
		"acls": []string{"api-key:endpoint:realtime", "api-key:model:*"}}, 200)["apiKey"].(string)
	otherTeam := otherTeamKey(t, d)

	run := startSipp(t, d, number, sippControl{ByeReason: "hung up by the API"}, 1, 1)
	id := h.next(t, "realtime.call.incoming", 10*time.Second).Data["call_id"].(string)
	ctl, status, raw := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", raw)
	ctl.nextWhere(t, "switchboard.call.state", "state", "active", 10*time.Second)

	listener := newBrowserPeer(t, true)
	offer := listener.offer()
	url := d.URL + "/v1/calls/" + id + "/listen"
	st, _, body := postOffer(t, url, d.OwnerKey, "application/json", offer, nil)
	require.Equal(t, http.StatusUnsupportedMediaType, st, body)
	st, _, body = postOffer(t, url, d.OwnerKey, "application/sdp", "v=0\r\nnot an offer", nil)
	requireAPIError(t, st, body, http.StatusBadRequest, "sdp")
	st, _, body = postOffer(t, url, d.OwnerKey, "application/sdp", "", nil)
	requireAPIError(t, st, body, http.StatusBadRequest, "sdp")
	st, _, body = postOffer(t, d.URL+"/v1/calls/00000000-0000-4000-8000-000000000000/listen", d.OwnerKey, "application/sdp", offer, nil)
	requireAPIError(t, st, body, http.StatusNotFound, "")
	st, _, body = postOffer(t, url, realtimeOnly, "application/sdp", offer, nil)
	requireAPIError(t, st, body, http.StatusForbidden, "")
	st, _, body = postOffer(t, d.URL+"/v1/calls/"+id+"/takeover", otherTeam, "application/sdp", offer, nil)
	requireAPIError(t, st, body, http.StatusNotFound, "")
	st, _, _ = d.Do(t, "GET", "/v1/calls/"+id+"/listen", d.OwnerKey, nil)
	require.Equal(t, http.StatusMethodNotAllowed, st)

	var hd http.Header
	st, hd, body = postOffer(t, url, d.OwnerKey, "application/sdp", offer, listener.pc)
	require.Equal(t, http.StatusCreated, st, body)
	require.Equal(t, "application/sdp", hd.Get("Content-Type"))
	require.Equal(t, "/v1/calls/"+id, hd.Get("Location"))
	listenParty := hd.Get("X-Switchboard-Party-Id")
	require.Regexp(t, `^[0-9a-f-]{36}$`, listenParty)
	select {
	case <-listener.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener's browser did not connect")
	}
	require.Eventually(t, func() bool { return len(listener.heardPCM()) >= 24000 }, 10*time.Second, 20*time.Millisecond,
		"the listener's connection carries the call's line")

	// A takeover whose browser is still connecting holds the call: a
	// second is refused at once, and goes through once the first browser
	// gave up (it never applies its answer: the connect timeout, 2 s).
	ghost := newBrowserPeer(t, true)
	st, _, body = postOffer(t, d.URL+"/v1/calls/"+id+"/takeover", d.OwnerKey, "application/sdp", ghost.offer(), nil)
	require.Equal(t, http.StatusCreated, st, body)
	sup := newBrowserPeer(t, true)
	supOffer := sup.offer()
	st, _, body = postOffer(t, d.URL+"/v1/calls/"+id+"/takeover", d.OwnerKey, "application/sdp", supOffer, nil)
	requireAPIError(t, st, body, http.StatusConflict, "call_id")
	require.Contains(t, body, "another supervisor is taking call")
	require.Eventually(t, func() bool {
		st, hd, body = postOffer(t, d.URL+"/v1/calls/"+id+"/takeover", d.OwnerKey, "application/sdp", supOffer, sup.pc)
		return st == http.StatusCreated
	}, 10*time.Second, 250*time.Millisecond, "the takeover goes through once the first browser gave up: %d %s", st, body)
	takeoverParty := hd.Get("X-Switchboard-Party-Id")
	ce := ctl.waitClosed(t, 10*time.Second)
	require.NotNil(t, ce)
	require.Contains(t, ce.Text, "taken over by supervisor", "the controller is told why it was let go")
	second := newBrowserPeer(t, true)
	st, _, body = second.supervise(d.URL, id, "takeover", d.OwnerKey)
	requireAPIError(t, st, body, http.StatusConflict, "call_id")
	_, status, raw = dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, http.StatusConflict, status, "no controller after a takeover: %s", raw)
	select {
	case <-sup.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor's browser did not connect")
	}

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, map[string]any{}, 200)
	run.wait(t, 15*time.Second)
	end := h.next(t, "realtime.call.ended", 5*time.Second)
	require.Equal(t, id, end.Data["call_id"])
	requireNoCalls(t, d)
	rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
	require.Equal(t, "hung up by the API", rec["end_reason"])
	var steps []string
	for _, ev := range rec["events"].([]any) {
		if ev := ev.(map[string]any); ev["kind"] == "supervisor" {
			steps = append(steps, ev["text"].(string)+" "+ev["data"].(map[string]any)["party_id"].(string))
		}
	}
	require.Contains(t, steps, "listen "+listenParty)
	require.Contains(t, steps, "takeover "+takeoverParty)
	require.Contains(t, steps, "left "+listenParty)
	require.Contains(t, steps, "left "+takeoverParty)

	late := newBrowserPeer(t, true)
	st, _, body = late.supervise(d.URL, id, "listen", d.OwnerKey)
	requireAPIError(t, st, body, http.StatusConflict, "call_id")
	select {
	case ev := <-h.events:
		require.NotEqual(t, "realtime.call.ended", ev.Type, "the call's end is told once")
	case <-time.After(500 * time.Millisecond):
	}
}
