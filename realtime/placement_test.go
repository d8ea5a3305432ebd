package realtime

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func decodeConfig(t *testing.T, doc string) SessionConfig {
	t.Helper()
	var c SessionConfig
	require.NoError(t, json.Unmarshal([]byte(doc), &c))
	return c
}

// TestPlacementsFold: the voice and the turn detection given where the
// spec places them (top level) are the same state as given nested (the
// GA placement): the nested members hold them, Merge applies them, and
// both placements are written back with the same values.
func TestPlacementsFold(t *testing.T) {
	base := SessionConfig{Audio: &AudioConfig{
		Input:  &AudioInput{Format: PCM24k(), TurnDetection: Some(TurnDetection{Type: TurnServerVAD})},
		Output: &AudioOutput{Format: PCM24k(), Voice: Voice{Name: "eve"}},
	}}
	for _, doc := range []string{
		`{"voice":"ara","turn_detection":null}`,
		`{"audio":{"output":{"voice":"ara"},"input":{"turn_detection":null}}}`,
		`{"voice":"ara","turn_detection":null,"audio":{"output":{"voice":"ARA"},"input":{"turn_detection":null}}}`,
	} {
		t.Run(doc, func(t *testing.T) {
			u := decodeConfig(t, doc)
			require.NoError(t, u.Validate())
			require.Empty(t, u.Extra, "the top-level members are not kept as unknown ones")
			cfg := base.Clone()
			cfg.Merge(u)
			require.Nil(t, cfg.TurnDetection(), "turn_detection null: manual commit")
			require.True(t, strings.EqualFold("ara", cfg.Audio.Output.Voice.String()))

			var out map[string]any
			b, err := json.Marshal(cfg)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &out))
			require.Contains(t, out, "turn_detection")
			require.Nil(t, out["turn_detection"])
			require.Equal(t, cfg.Audio.Output.Voice.String(), out["voice"])
			audio := out["audio"].(map[string]any)
			require.Nil(t, audio["input"].(map[string]any)["turn_detection"])
			require.Contains(t, audio["input"].(map[string]any), "turn_detection")
			require.Equal(t, out["voice"], audio["output"].(map[string]any)["voice"])
			require.Equal(t, "pcm", strings.TrimPrefix(audio["output"].(map[string]any)["format"].(map[string]any)["type"].(string), "audio/"))
			// The written state reads back as itself.
			back := decodeConfig(t, string(b))
			require.NoError(t, back.Validate())
			require.Nil(t, back.TurnDetection())
		})
	}
}

// TestPlacementsConflict: one member given in both places with two
// values is refused, naming the spec's member.
func TestPlacementsConflict(t *testing.T) {
	for doc, param := range map[string]string{
		`{"voice":"ara","audio":{"output":{"voice":"rex"}}}`:                                                    "session.voice",
		`{"turn_detection":null,"audio":{"input":{"turn_detection":{"type":"server_vad"}}}}`:                    "session.turn_detection",
		`{"turn_detection":{"type":"server_vad"},"audio":{"input":{"turn_detection":{"type":"semantic_vad"}}}}`: "session.turn_detection",
	} {
		c := decodeConfig(t, doc)
		var ce *ConfigError
		require.True(t, errors.As(c.Validate(), &ce), doc)
		require.Equal(t, param, ce.Param)
	}
}

// TestPlacementsErrorsNameThePlaceUsed: a bad turn detection or voice is
// named where the client put it.
func TestPlacementsErrorsNameThePlaceUsed(t *testing.T) {
	var ce *ConfigError
	c := decodeConfig(t, `{"turn_detection":{"type":"loud"}}`)
	require.True(t, errors.As(c.Validate(), &ce))
	require.Equal(t, "session.turn_detection.type", ce.Param)
	c = decodeConfig(t, `{"audio":{"input":{"turn_detection":{"type":"server_vad","idle_timeout_ms":-1}}}}`)
	require.True(t, errors.As(c.Validate(), &ce))
	require.Equal(t, "session.audio.input.turn_detection.idle_timeout_ms", ce.Param)

	known := func(id string) bool { return strings.EqualFold(id, "eve") }
	c = decodeConfig(t, `{"voice":"marin"}`)
	require.True(t, errors.As(c.CheckVoice(known), &ce))
	require.Equal(t, "session.voice", ce.Param)
	require.Contains(t, ce.Message, `"marin"`)
	c = decodeConfig(t, `{"audio":{"output":{"voice":"marin"}}}`)
	require.True(t, errors.As(c.CheckVoice(known), &ce))
	require.Equal(t, "session.audio.output.voice", ce.Param)
	c = decodeConfig(t, `{"voice":""}`)
	require.True(t, errors.As(c.CheckVoice(known), &ce))
	require.Equal(t, "session.voice", ce.Param)
	c = decodeConfig(t, `{"voice":"EVE"}`)
	require.NoError(t, c.CheckVoice(known))
	c = decodeConfig(t, `{"instructions":"x"}`)
	require.NoError(t, c.CheckVoice(known))
}

// TestShapes: a provider is sent one placement; clients both.
func TestShapes(t *testing.T) {
	c := decodeConfig(t, `{"instructions":"x","voice":"ara","turn_detection":{"type":"server_vad"},"audio":{"input":{"format":{"type":"audio/pcmu"}}}}`)
	nested, err := json.Marshal(c.Shaped(ShapeNested))
	require.NoError(t, err)
	require.JSONEq(t, `{"instructions":"x","audio":{"input":{"format":{"type":"audio/pcmu"},"turn_detection":{"type":"server_vad"}},"output":{"voice":"ara"}}}`, string(nested))
	top, err := json.Marshal(c.Shaped(ShapeTopLevel))
	require.NoError(t, err)
	require.JSONEq(t, `{"instructions":"x","voice":"ara","turn_detection":{"type":"server_vad"},"audio":{"input":{"format":{"type":"audio/pcmu"}}}}`, string(top))
	both, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, `{"instructions":"x","voice":"ara","turn_detection":{"type":"server_vad"},"audio":{"input":{"format":{"type":"audio/pcmu"},"turn_detection":{"type":"server_vad"}},"output":{"voice":"ara"}}}`, string(both))
	for name, want := range map[string]SessionShape{"nested": ShapeNested, "top_level": ShapeTopLevel} {
		got, ok := ParseSessionShape(name)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	_, ok := ParseSessionShape("both")
	require.False(t, ok)
}
