package test

import (
	"encoding/base64"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// goTypeWords are Go's words for types, which no error a client sees
// may hold.
var goTypeWords = regexp.MustCompile(`\[\]string|\bstruct\b|Go |int64|map\[|json:|float64|realtime\.`)

// TestSessionFieldsWhereTheSpecPutsThem: a client secret's stored session
// and a session.update take the voice and the turn detection at the top
// level (the spec's placement) as they take them nested (the GA API's),
// apply them (VAD off: a commit is taken; the voice set), and report one
// state in both placements. A voice the appliance cannot speak is refused
// naming the member as given; turn_detection.idle_timeout_ms checks in on
// a silent caller of a direct session.
func TestSessionFieldsWhereTheSpecPutsThem(t *testing.T) {
	d := startDaemon(t, withDrain(nil))
	for _, tc := range []struct {
		session map[string]any
		param   string
	}{
		{map[string]any{"type": "realtime", "voice": "marin"}, "session.voice"},
		{map[string]any{"type": "realtime", "audio": map[string]any{"output": map[string]any{"voice": "marin"}}}, "session.audio.output.voice"},
		{map[string]any{"type": "realtime", "voice": "ara", "audio": map[string]any{"output": map[string]any{"voice": "rex"}}}, "session.voice"},
		{map[string]any{"type": "realtime", "turn_detection": map[string]any{"type": "loud"}}, "session.turn_detection.type"},
	} {
		m := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{"session": tc.session}, 400)
		require.Equal(t, tc.param, m["error"].(map[string]any)["param"])
	}

	// The voices a session may name are the ones the appliance lists.
	var ids []string
	for _, v := range d.JSON(t, "GET", "/v1/custom-voices", d.OwnerKey, nil, 200)["voices"].([]any) {
		ids = append(ids, v.(map[string]any)["voice_id"].(string))
	}
	require.Contains(t, ids, "ara")
	require.NotContains(t, ids, "marin")

	sec := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{
		"session": map[string]any{"type": "realtime", "instructions": "spec placement", "voice": "Ara", "turn_detection": nil}}, 200)
	stored := sec["session"].(map[string]any)
	require.Equal(t, "Ara", stored["voice"])
	require.Equal(t, "Ara", stored["audio"].(map[string]any)["output"].(map[string]any)["voice"], "answered in one state, both placements")

	c, status, body := dialController(t, wsURL(d, ""), bearer(sec["value"].(string)))
	require.Equal(t, 101, status, "%s", body)
	s := c.next(t, "session.created", 5*time.Second)["session"].(map[string]any)
	require.Equal(t, "Ara", s["voice"])
	require.Equal(t, "Ara", s["audio"].(map[string]any)["output"].(map[string]any)["voice"])
	in := s["audio"].(map[string]any)["input"].(map[string]any)
	require.Contains(t, s, "turn_detection")
	require.Nil(t, s["turn_detection"])
	require.Contains(t, in, "turn_detection")
	require.Nil(t, in["turn_detection"], "VAD off in both placements")

	// VAD is off: the caller's commit is taken.
	c.send(t, map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(make([]byte, 48*300))})
	c.send(t, map[string]any{"type": "input_audio_buffer.commit", "event_id": "commit1"})
	c.next(t, "input_audio_buffer.committed", 5*time.Second)

	// A voice /v1/tts would refuse is refused, named where it was given.
	c.send(t, map[string]any{"type": "session.update", "event_id": "v1", "session": map[string]any{"voice": "marin"}})
	e := c.next(t, "error", 5*time.Second)["error"].(map[string]any)
	require.Equal(t, "session.voice", e["param"])
	require.Equal(t, "v1", e["event_id"])
	c.send(t, map[string]any{"type": "session.update", "event_id": "v2", "session": map[string]any{"audio": map[string]any{"output": map[string]any{"voice": "alloy"}}}})
	e = c.next(t, "error", 5*time.Second)["error"].(map[string]any)
	require.Equal(t, "session.audio.output.voice", e["param"])
	require.Equal(t, "v2", e["event_id"])

	// Server VAD with an idle timer, in the spec's placement: after the
	// assistant's answer, a silent caller gets a check-in.
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"voice": "rex", "turn_detection": map[string]any{"type": "server_vad", "idle_timeout_ms": 800}}})
	upd := c.next(t, "session.updated", 5*time.Second)["session"].(map[string]any)
	require.Equal(t, "rex", upd["voice"])
	require.EqualValues(t, 800, upd["turn_detection"].(map[string]any)["idle_timeout_ms"])
	require.Equal(t, upd["turn_detection"], upd["audio"].(map[string]any)["input"].(map[string]any)["turn_detection"])
	c.send(t, map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "hello"}}}})
	c.send(t, map[string]any{"type": "response.create"})
	c.next(t, "response.done", 10*time.Second)
	to := c.next(t, "input_audio_buffer.timeout_triggered", 10*time.Second)
	require.NotEmpty(t, to["item_id"])
	c.next(t, "response.done", 10*time.Second) // the check-in
}

// TestErrorsSpeakTheAPI: bad bodies and bad realtime events, across the
// API, are refused naming the member (a dotted path) and the type it
// takes in the API's words; no message holds a Go type name, and a
// realtime error carries the client's event_id.
func TestErrorsSpeakTheAPI(t *testing.T) {
	d := startDaemon(t, withDrain(nil))
	for _, tc := range []struct {
		path  string
		body  string
		param string
		want  string
	}{
		{"/auth/teams/default/api-keys", `{"name":"k","acls":"api-key:endpoint:*"}`, "acls", "acls must be an array of strings, not a string"},
		{"/auth/teams/default/api-keys", `{"name":"k","acls":["api-key:endpoint:*",7]}`, "acls[1]", "acls[1] must be a string, not a number"},
		{"/auth/teams/default/api-keys", `{"name":"k","qps":"10"}`, "qps", "qps must be an integer, not a string"},
		{"/v1/agents", `{"name":5}`, "name", "name must be a string, not a number"},
		{"/v1/agents", `{"name":"a","tools":{"name":"x"}}`, "tools", "tools must be an array of objects, not an object"},
		{"/v2/phone-numbers", `{"origin":"byo_trunk","name":"n","sip_auth":{"allowed_addresses":"10.0.0.0/8"}}`, "sip_auth.allowed_addresses",
			"sip_auth.allowed_addresses must be an array of strings, not a string"},
		{"/v1/realtime/client_secrets", `{"expires_after":{"seconds":"60"}}`, "expires_after.seconds", "expires_after.seconds must be an integer, not a string"},
		{"/v1/realtime/client_secrets", `{"session":{"instructions":5}}`, "session.instructions", "session.instructions must be a string, not a number"},
		{"/v1/realtime/client_secrets", `{"session":{"tools":[{"type":"function","name":"a"},{"type":"function","name":1}]}}`, "session.tools[1].name",
			"session.tools[1].name must be a string, not a number"},
		{"/v1/realtime/calls/x/accept", `{"type":"realtime","instructions":true}`, "instructions", "instructions must be a string, not a boolean"},
		{"/v1/realtime/calls/x/reject", `{"status_code":"486"}`, "status_code", "status_code must be an integer, not a string"},
		{"/v1/tts", `{"text":"hi","language":"en","speed":"fast"}`, "speed", "speed must be a number, not a string"},
	} {
		t.Run(tc.path+" "+tc.body, func(t *testing.T) {
			status, _, raw := d.Do(t, "POST", tc.path, d.OwnerKey, tc.body)
			require.Equal(t, http.StatusBadRequest, status, "%s", raw)
			_, param, msg := apptest.ErrorOf(t, raw)
			require.Equal(t, tc.param, param)
			require.Equal(t, tc.want, msg)
			require.NotRegexp(t, goTypeWords, msg)
		})
	}

	c, status, body := dialController(t, wsURL(d, ""), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	c.next(t, "session.created", 5*time.Second)
	for _, tc := range []struct {
		event, id, param, want string
	}{
		{`{"type":"session.update","event_id":"e1","session":{"instructions":5}}`, "e1", "session.instructions", "session.instructions must be a string, not a number"},
		{`{"type":"session.update","event_id":"e2","session":{"turn_detection":{"type":"server_vad","silence_duration_ms":"500"}}}`, "e2",
			"session.turn_detection.silence_duration_ms", "session.turn_detection.silence_duration_ms must be an integer, not a string"},
		{`{"type":"conversation.item.create","event_id":"e3","item":{"type":"message","role":"user","content":[{"type":"input_text","text":["a"]}]}}`, "e3",
			"item.content[0].text", "item.content[0].text must be a string, not an array"},
		{`{"type":"response.create","event_id":"e4","response":{"output_modalities":"text"}}`, "e4", "response.output_modalities",
			"response.output_modalities must be an array of strings, not a string"},
		{`{"type":"session.update","event_id":"e5","session":[]}`, "e5", "session", "session must be an object, not an array"},
	} {
		require.NoError(t, c.conn.WriteMessage(1, []byte(tc.event)))
		e := c.next(t, "error", 5*time.Second)["error"].(map[string]any)
		require.Equal(t, tc.id, e["event_id"], tc.event)
		require.Equal(t, tc.param, e["param"], tc.event)
		require.Equal(t, tc.want, e["message"], tc.event)
		require.NotRegexp(t, goTypeWords, e["message"])
	}
}

// TestEchoSpeaksTheSessionVoice: the echo engine says its text answers
// with the TTS engine in the session's voice: the same sentence in eve
// (the default) twice is the same audio, in rex (set where the spec puts
// it) another.
func TestEchoSpeaksTheSessionVoice(t *testing.T) {
	d := startDaemon(t, withDrain(nil))
	c, status, body := dialController(t, wsURL(d, ""), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	c.next(t, "session.created", 5*time.Second)
	say := func() string {
		t.Helper()
		c.send(t, map[string]any{"type": "response.create", "response": map[string]any{"instructions": "Good morning, this is the voice test."}})
		var audio []byte
		for {
			ev := c.nextAny(t, 10*time.Second)
			switch ev["type"] {
			case "response.output_audio.delta":
				b, err := base64.StdEncoding.DecodeString(ev["delta"].(string))
				require.NoError(t, err)
				audio = append(audio, b...)
			case "response.done":
				require.Greater(t, len(audio), 48000/2, "half a second of speech at least")
				return string(audio)
			}
		}
	}
	eve := say()
	require.Equal(t, eve, say(), "the same voice says it the same way")
	c.send(t, map[string]any{"type": "session.update", "session": map[string]any{"voice": "rex"}})
	c.next(t, "session.updated", 5*time.Second)
	require.NotEqual(t, eve, say(), "rex is another voice")
}
