package control

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/conversation"
)

func ringing(id string) *fakeCall {
	return &fakeCall{phone: &fakePhone{id: id, state: call.StateRinging, ctx: context.Background()}, team: "team-a"}
}

// doAs is do with a key whose ACL grants models (nil: none).
func doAs(t *testing.T, h func(http.ResponseWriter, *http.Request) error, allows func(string) bool, id, body string) (int, string, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/realtime/calls/"+id+"/x", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.SetPathValue("call_id", id)
	r = r.WithContext(httpx.WithPrincipal(r.Context(), &httpx.Principal{TeamID: "team-a", AllowsModel: allows}))
	w := httptest.NewRecorder()
	if err := h(w, r); err != nil {
		var he *httpx.Error
		require.ErrorAs(t, err, &he)
		return he.Status, he.Param, he.Message
	}
	require.JSONEq(t, `{}`, w.Body.String())
	return w.Code, "", ""
}

// TestAcceptBodies: accept takes the hosted API's session configuration
// (either placement of the voice and turn detection) and refuses a bad
// one with 400 naming the member as the body holds it, a model the key
// may not use with 403; unknown calls are 404, calls already answered,
// rejected or ended 409.
func TestAcceptBodies(t *testing.T) {
	all := func(string) bool { return true }
	c := ringing("c1")
	answered := ringing("c2")
	answered.decision = conversation.ErrCallAnswered
	over := ringing("c3")
	over.decision = conversation.ErrCallOver
	agentCall := ringing("c4")
	agentCall.decision = conversation.ErrNotControlled
	s := newService(t, fakeCalls{"c1": c, "c2": answered, "c3": over, "c4": agentCall})

	for _, tc := range []struct {
		name, id, body string
		status         int
		param          string
	}{
		{"no type", "c1", `{"instructions":"x"}`, 400, "type"},
		{"empty", "c1", ``, 400, "type"},
		{"bad type", "c1", `{"type":"transcription"}`, 400, "type"},
		{"instructions", "c1", `{"type":"realtime","instructions":5}`, 400, "instructions"},
		{"tools", "c1", `{"type":"realtime","tools":[{"type":"function","name":"a"},{"type":"function","name":7}]}`, 400, "tools[1].name"},
		{"voice", "c1", `{"type":"realtime","audio":{"output":{"voice":"marin"}}}`, 400, "audio.output.voice"},
		{"spec voice", "c1", `{"type":"realtime","voice":"marin"}`, 400, "voice"},
		{"two voices", "c1", `{"type":"realtime","voice":"ara","audio":{"output":{"voice":"rex"}}}`, 400, "voice"},
		{"format", "c1", `{"type":"realtime","audio":{"input":{"format":{"type":"audio/opus"}}}}`, 400, "audio.input.format"},
		{"model", "c1", `{"type":"realtime","model":"gpt-nope"}`, 400, "model"},
		{"unknown call", "nope", `{"type":"realtime"}`, 404, ""},
		{"agent call", "c4", `{"type":"realtime"}`, 404, ""},
		{"answered", "c2", `{"type":"realtime"}`, 409, "call_id"},
		{"ended", "c3", `{"type":"realtime"}`, 409, "call_id"},
		{"ended, gone", "over", `{"type":"realtime"}`, 409, "call_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, param, msg := doAs(t, s.accept, all, tc.id, tc.body)
			require.Equal(t, tc.status, status, msg)
			require.Equal(t, tc.param, param, msg)
			require.NotContains(t, msg, "session.", "the body is the session: members are named from it")
		})
	}
	status, _, _ := doAs(t, s.accept, func(m string) bool { return m == "svc-voice-fast-1.0" }, "c1", `{"type":"realtime","model":"svc-voice-latest"}`)
	require.Equal(t, http.StatusForbidden, status)
	require.Nil(t, c.accepted, "nothing refused was applied")

	status, _, msg := doAs(t, s.accept, all, "c1", `{"type":"realtime","model":"svc-voice-fast-1.0","instructions":"Be brief.","voice":"Ara","turn_detection":null,
		"tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}}],"audio":{"input":{"format":{"type":"audio/pcm","rate":24000}}}}`)
	require.Equal(t, http.StatusOK, status, msg)
	require.NotNil(t, c.accepted)
	require.Equal(t, "svc-voice-fast-1.0", c.accepted.Model)
	require.Equal(t, "Be brief.", *c.accepted.Instructions)
	require.Equal(t, "Ara", c.accepted.Audio.Output.Voice.String())
	require.Nil(t, c.accepted.TurnDetection(), "turn_detection null: manual commit")
	require.Equal(t, "lookup", c.accepted.Tools[0].Name)
}

// TestRejectBodies: reject sends status_code (default 603); a status
// that is not a final error status is 400; unknown 404; decided 409.
func TestRejectBodies(t *testing.T) {
	c, d := ringing("c1"), ringing("c2")
	answered := ringing("c3")
	answered.decision = conversation.ErrCallAnswered
	s := newService(t, fakeCalls{"c1": c, "c2": d, "c3": answered})
	for _, tc := range []struct {
		name, id, body string
		status         int
		param          string
	}{
		{"200", "c1", `{"status_code":200}`, 400, "status_code"},
		{"302", "c1", `{"status_code":302}`, 400, "status_code"},
		{"700", "c1", `{"status_code":700}`, 400, "status_code"},
		{"string", "c1", `{"status_code":"486"}`, 400, "status_code"},
		{"fraction", "c1", `{"status_code":486.5}`, 400, "status_code"},
		{"unknown member", "c1", `{"code":486}`, 400, "code"},
		{"unknown call", "nope", `{}`, 404, ""},
		{"answered", "c3", `{}`, 409, "call_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, param, msg := doAs(t, s.reject, nil, tc.id, tc.body)
			require.Equal(t, tc.status, status, msg)
			require.Equal(t, tc.param, param, msg)
		})
	}
	require.Zero(t, c.rejected)
	status, _, _ := doAs(t, s.reject, nil, "c1", `{"status_code":486}`)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 486, c.rejected)
	status, _, _ = doAs(t, s.reject, nil, "c2", `{}`)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, DefaultRejectStatus, d.rejected)
}
