package control

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/conversation"
	"switchboard/stream"
)

// TestSendToStream: POST /v1/calls/{call_id}/stream refuses a bad stream
// with 400 naming the field, before the call is looked at; takes a
// ringing or answered call; says 409 for a call not routed to a webhook
// or already streamed, 502 for a bot that cannot be reached.
func TestSendToStream(t *testing.T) {
	live := active("live", nil)
	ringing := active("ringing", nil)
	ringing.phone.state = call.StateRinging
	agentCall := active("agent", nil)
	agentCall.streamErr = conversation.ErrNotControlled
	streamed := active("streamed", nil)
	streamed.streamErr = conversation.ErrStreamed
	down := active("down", nil)
	down.streamErr = fmt.Errorf("%w: no upgrade within 5s", stream.ErrUnreachable)
	s := newService(t, fakeCalls{"live": live, "ringing": ringing, "agent": agentCall, "streamed": streamed, "down": down})

	for _, tc := range []struct{ body, param string }{
		{`{}`, "url"},
		{`{"url":"https://bot.example/media"}`, "url"},
		{`{"url":"ws://169.254.169.254/media"}`, "url"},
		{`{"url":"ws://user:pw@bot.example/media"}`, "url"},
		{`{"url":"wss://bot.example/media","track":"outbound"}`, "track"},
		{`{"url":"wss://bot.example/media","protocol":"sip"}`, "protocol"},
		{`{"url":"wss://bot.example/media","parameters":{"":"x"}}`, "parameters"},
		{`{"url":"tcp://bot.example/x","protocol":"audiosocket"}`, "url"},
		{`{"url":"tcp://bot.example:9092","protocol":"audiosocket","track":"both"}`, "track"},
		{`{"url":"wss://bot.example/media","fallback_agent_id":"ag_1"}`, "fallback_agent_id"},
	} {
		status, param := do(t, s.sendToStream, "team-a", "live", tc.body)
		require.Equal(t, http.StatusBadRequest, status, tc.body)
		require.Equal(t, tc.param, param, tc.body)
	}
	require.Empty(t, live.stream.URL, "nothing dialed")

	ok := func(id, body string) *fakeCall {
		t.Helper()
		rec := doRecorded(t, s.sendToStream, "team-a", id, body)
		require.Equal(t, http.StatusOK, rec.Code)
		require.JSONEq(t, `{"call_id":"`+id+`","stream_sid":"MZ1"}`, rec.Body.String())
		return map[string]*fakeCall{"live": live, "ringing": ringing}[id]
	}
	c := ok("live", `{"url":"wss://bot.example/media","parameters":{"tier":"gold"},"auth_token":"t","track":"both"}`)
	require.Equal(t, call.StreamTarget{URL: "wss://bot.example/media", Parameters: map[string]string{"tier": "gold"}, AuthToken: "t",
		Track: "both", Protocol: "twilio"}, c.stream)
	c = ok("ringing", `{"url":"tcp://127.0.0.1:9092","protocol":"audiosocket"}`)
	require.Equal(t, call.StreamTarget{URL: "tcp://127.0.0.1:9092", Track: "inbound", Protocol: "audiosocket"}, c.stream)

	for id, want := range map[string]int{"agent": 409, "streamed": 409, "down": 502, "nope": 404} {
		status, param := do(t, s.sendToStream, "team-a", id, `{"url":"wss://bot.example/media"}`)
		require.Equal(t, want, status, id)
		if want == 502 {
			require.Equal(t, "url", param)
		}
	}
}

// doRecorded runs h like do and returns its answer when it succeeds.
func doRecorded(t *testing.T, h func(http.ResponseWriter, *http.Request) error, team, id, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/calls/"+id+"/stream", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.SetPathValue("call_id", id)
	r = r.WithContext(httpx.WithPrincipal(r.Context(), &httpx.Principal{TeamID: team}))
	w := httptest.NewRecorder()
	require.NoError(t, h(w, r))
	return w
}
