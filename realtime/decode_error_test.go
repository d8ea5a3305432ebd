package realtime

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeErrorsSpeakTheAPI: a client event whose members have the
// wrong types is refused naming the member (its path from the event's
// root, array indices included) and the type it takes, in the protocol's
// words; the answer carries the event's event_id when it could be read.
func TestDecodeErrorsSpeakTheAPI(t *testing.T) {
	for _, tc := range []struct {
		msg, eventID, param, text string
	}{
		{`{"type":"session.update","event_id":"e1","session":{"instructions":5}}`, "e1", "session.instructions",
			"session.instructions must be a string, not a number"},
		{`{"event_id":"e2","type":"session.update","session":{"audio":{"input":{"turn_detection":{"type":"server_vad","silence_duration_ms":"500"}}}}}`, "e2",
			"session.audio.input.turn_detection.silence_duration_ms", "session.audio.input.turn_detection.silence_duration_ms must be an integer, not a string"},
		{`{"type":"session.update","session":{"tools":[{"type":"function","name":"a"},{"type":"function","name":3}]}}`, "",
			"session.tools[1].name", "session.tools[1].name must be a string, not a number"},
		{`{"type":"session.update","event_id":"e4","session":{"tools":{}}}`, "e4", "session.tools", "session.tools must be an array of objects, not an object"},
		{`{"type":"session.update","event_id":"e5","session":5}`, "e5", "session", "session must be an object, not a number"},
		{`{"type":"session.update","event_id":"e6","session":{"temperature":"hot"}}`, "e6", "session.temperature", "session.temperature must be a number, not a string"},
		{`{"type":"conversation.item.create","event_id":"e7","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":1}]}}`, "e7",
			"item.content[1].text", "item.content[1].text must be a string, not a number"},
		{`{"type":"conversation.item.truncate","event_id":"e8","item_id":"i","content_index":0,"audio_end_ms":1.5}`, "e8", "audio_end_ms", "audio_end_ms must be an integer, not 1.5"},
		{`{"type":"response.create","event_id":"e9","response":{"output_modalities":"text"}}`, "e9", "response.output_modalities", "response.output_modalities must be an array of strings, not a string"},
		{`{"type":"session.update","event_id":"e10","session":{"audio":{"output":{"voice":5}}}}`, "e10", "session.audio.output.voice", "session.audio.output.voice must be a string, not a number"},
		{`{"type":"session.update","event_id":"e11","session":{"turn_detection":{"type":1}}}`, "e11", "session.turn_detection.type", "session.turn_detection.type must be a string, not a number"},
		{`{"type":5,"event_id":"e12"}`, "e12", "type", "the event must have a type member, a string"},
		{`[1,2]`, "", "", "the message must be a JSON object (a realtime event)"},
		{`{"type":"session.update","event_id":"e14","session":{`, "e14", "", "the message is not valid JSON"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			_, err := Decode([]byte(tc.msg))
			require.ErrorIs(t, err, ErrMalformed)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "%v", err)
			require.Equal(t, tc.param, de.Param)
			require.Equal(t, tc.text, de.Message)
			require.Equal(t, tc.eventID, de.EventID)
			ev := DecodeErrorEvent(err)
			require.Equal(t, tc.eventID, ev.Error.EventID)
			require.Equal(t, tc.param, ev.Error.Param)
			for _, w := range []string{"[]string", "Go ", "int64", "map[", "json:", "realtime.", "plain"} {
				require.NotContains(t, ev.Error.Message, w)
			}
			require.NotRegexp(t, `\bstruct\b`, ev.Error.Message)
		})
	}
}
