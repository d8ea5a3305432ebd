package echo

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
)

// sendJSON decodes a client event from its wire form (as the realtime
// handler does) and sends it.
func sendJSON(t *testing.T, s realtime.Session, msg string) {
	t.Helper()
	e, err := realtime.Decode([]byte(msg))
	require.NoError(t, err)
	require.NoError(t, s.Send(context.Background(), e))
}

// sessionJSON is the session member of a session event as a client
// reads it.
func sessionJSON(t *testing.T, e realtime.Event) map[string]any {
	t.Helper()
	b, err := realtime.Encode(e)
	require.NoError(t, err)
	var m struct {
		Session map[string]any `json:"session"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	return m.Session
}

func lastOf(evs []realtime.Event) realtime.Event { return evs[len(evs)-1] }

// TestSpecPlacementsApplied: session.update with the spec's top-level
// "turn_detection": null turns server VAD off (a commit is then taken)
// and top-level "voice" sets the voice; session.updated reports one
// state, the same in both placements. The default voice is the spec's.
func TestSpecPlacementsApplied(t *testing.T) {
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{})
	sendJSON(t, s, `{"type":"session.update","session":{"type":"realtime"}}`)
	first := sessionJSON(t, lastOf(until(t, s, realtime.TypeSessionUpdated)))
	require.Equal(t, "eve", first["voice"], "the default voice is the spec's")

	sendJSON(t, s, `{"type":"session.update","event_id":"u1","session":{"type":"realtime","voice":"ara","turn_detection":null}}`)
	upd := sessionJSON(t, lastOf(until(t, s, realtime.TypeSessionUpdated)))
	require.Equal(t, "ara", upd["voice"])
	require.Contains(t, upd, "turn_detection")
	require.Nil(t, upd["turn_detection"])
	audio := upd["audio"].(map[string]any)
	require.Equal(t, "ara", audio["output"].(map[string]any)["voice"], "both placements say the same")
	in := audio["input"].(map[string]any)
	require.Contains(t, in, "turn_detection")
	require.Nil(t, in["turn_detection"])

	// VAD is off: the commit is taken.
	feed(t, s, pcm(300, 8000), 960)
	sendJSON(t, s, `{"type":"input_audio_buffer.commit","event_id":"c1"}`)
	evs := until(t, s, realtime.TypeInputAudioBufferCommitted)
	for _, e := range evs {
		_, isErr := e.(*realtime.ErrorEvent)
		require.False(t, isErr, "%+v", e)
	}

	// The nested placement turns it back on, and both placements follow.
	sendJSON(t, s, `{"type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"server_vad"}}}}}`)
	upd = sessionJSON(t, lastOf(until(t, s, realtime.TypeSessionUpdated)))
	require.Equal(t, "server_vad", upd["turn_detection"].(map[string]any)["type"])
	require.Equal(t, upd["turn_detection"], upd["audio"].(map[string]any)["input"].(map[string]any)["turn_detection"])
	sendJSON(t, s, `{"type":"input_audio_buffer.commit","event_id":"c2"}`)
	e := until(t, s, realtime.TypeError)
	require.Equal(t, "c2", e[len(e)-1].(*realtime.ErrorEvent).Error.EventID)

	// Two placements with two values: refused, naming the spec's member.
	sendJSON(t, s, `{"type":"session.update","event_id":"u3","session":{"voice":"rex","audio":{"output":{"voice":"sal"}}}}`)
	e = until(t, s, realtime.TypeError)
	ed := e[len(e)-1].(*realtime.ErrorEvent).Error
	require.Equal(t, "session.voice", ed.Param)
	require.Equal(t, "u3", ed.EventID)
}

// voiceSynth records the voices it is asked to speak in.
type voiceSynth struct{ voices chan string }

func (v voiceSynth) Synthesize(_ context.Context, text, voice string, rate int) ([]int16, error) {
	v.voices <- voice
	return make([]int16, rate/10), nil
}

// TestVoiceSpoken: the echo engine speaks its text answers in the
// session's voice, set in either placement; the default one is eve.
func TestVoiceSpoken(t *testing.T) {
	synth := voiceSynth{voices: make(chan string, 4)}
	s := open(t, Options{Unpaced: true, Synthesizer: synth}, realtime.SessionConfig{})
	ask := func() string {
		t.Helper()
		sendJSON(t, s, `{"type":"response.create","response":{"instructions":"Hello."}}`)
		until(t, s, realtime.TypeResponseDone)
		return <-synth.voices
	}
	require.Equal(t, "eve", ask())
	sendJSON(t, s, `{"type":"session.update","session":{"voice":"rex"}}`)
	until(t, s, realtime.TypeSessionUpdated)
	require.Equal(t, "rex", ask())
	sendJSON(t, s, `{"type":"session.update","session":{"audio":{"output":{"voice":"sal"}}}}`)
	until(t, s, realtime.TypeSessionUpdated)
	require.Equal(t, "sal", ask())
}
