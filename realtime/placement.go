package realtime

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Two members of a session configuration have two places. The spec puts
// the voice and the turn detection at the session's top level
// ("voice", "turn_detection": null for manual commit); the OpenAI GA API,
// whose official SDKs the appliance serves too, nests them
// ("audio.output.voice", "audio.input.turn_detection"). A configuration
// takes either placement (or both, when they agree), keeps one state (the
// nested members of SessionConfig), and writes it back in both placements
// for clients, or in the one placement a provider takes (SessionShape).

// SessionShape says where MarshalJSON writes the voice and the turn
// detection of a session configuration.
type SessionShape int

const (
	// ShapeBoth writes them in both placements, with the same values:
	// what clients are sent (session.created, session.updated, a client
	// secret's session), so that a client of either placement reads it.
	ShapeBoth SessionShape = iota
	// ShapeNested writes audio.output.voice and audio.input.turn_detection
	// only, as the OpenAI GA API takes them.
	ShapeNested
	// ShapeTopLevel writes voice and turn_detection at the top only, as
	// the spec places them.
	ShapeTopLevel
)

// Names of the shapes in settings (upstream.session_fields).
const (
	ShapeNameNested   = "nested"
	ShapeNameTopLevel = "top_level"
)

// ParseSessionShape reads a shape's setting name: "nested" or
// "top_level".
func ParseSessionShape(name string) (SessionShape, bool) {
	switch name {
	case ShapeNameNested:
		return ShapeNested, true
	case ShapeNameTopLevel:
		return ShapeTopLevel, true
	}
	return ShapeBoth, false
}

// Shaped returns s written in shape by MarshalJSON.
func (s SessionConfig) Shaped(shape SessionShape) SessionConfig {
	s.shape = shape
	return s
}

// placement remembers where a decoded configuration gave its voice and
// turn detection ("" when it gave none), to name them in errors the way
// the client wrote them, and which one it gave twice with two values.
type placement struct {
	voice, turnDetection string
	conflict             string
}

// The members' names in each placement.
const (
	topVoice         = "voice"
	topTurnDetection = "turn_detection"
	nestedVoice      = "audio.output.voice"
	nestedTurn       = "audio.input.turn_detection"
)

// fold moves the top-level members a decoded configuration gave into
// their nested places, recording where each was given.
func (s *SessionConfig) fold(voice *Voice, td Nullable[TurnDetection]) {
	var nv Voice
	nestedTD := Nullable[TurnDetection]{}
	if s.Audio != nil && s.Audio.Output != nil {
		nv = s.Audio.Output.Voice
	}
	if s.Audio != nil && s.Audio.Input != nil {
		nestedTD = s.Audio.Input.TurnDetection
	}
	if !nv.IsZero() {
		s.placed.voice = nestedVoice
	}
	if nestedTD.Present {
		s.placed.turnDetection = nestedTurn
	}
	if voice != nil {
		if !nv.IsZero() && !sameVoice(nv, *voice) {
			s.placed.conflict = topVoice
		}
		s.placed.voice = topVoice
		s.output().Voice = *voice
	}
	if td.Present {
		if nestedTD.Present && !sameJSON(nestedTD, td) {
			s.placed.conflict = topTurnDetection
		}
		s.placed.turnDetection = topTurnDetection
		s.input().TurnDetection = td
	}
}

func (s *SessionConfig) output() *AudioOutput {
	if s.Audio == nil {
		s.Audio = &AudioConfig{}
	}
	if s.Audio.Output == nil {
		s.Audio.Output = &AudioOutput{}
	}
	return s.Audio.Output
}

func (s *SessionConfig) input() *AudioInput {
	if s.Audio == nil {
		s.Audio = &AudioConfig{}
	}
	if s.Audio.Input == nil {
		s.Audio.Input = &AudioInput{}
	}
	return s.Audio.Input
}

// sameVoice compares voices as the spec does: ids case-insensitively.
func sameVoice(a, b Voice) bool {
	return strings.EqualFold(a.Name, b.Name) && strings.EqualFold(a.ID, b.ID)
}

func sameJSON(a, b any) bool {
	ab, aerr := json.Marshal(a)
	bb, berr := json.Marshal(b)
	return aerr == nil && berr == nil && bytes.Equal(ab, bb)
}

// VoiceParam names the voice member the way the configuration gave it:
// "voice" (the spec's placement) or "audio.output.voice".
func (s *SessionConfig) VoiceParam() string {
	if s.placed.voice != "" {
		return s.placed.voice
	}
	return nestedVoice
}

// turnDetectionParam names the turn detection member the way the
// configuration gave it.
func (s *SessionConfig) turnDetectionParam() string {
	if s.placed.turnDetection != "" {
		return s.placed.turnDetection
	}
	return nestedTurn
}

// GivesVoice reports whether the configuration names a voice (in either
// placement).
func (s *SessionConfig) GivesVoice() bool {
	return s.placed.voice != "" || (s.Audio != nil && s.Audio.Output != nil && !s.Audio.Output.Voice.IsZero())
}

// CheckVoice refuses a voice that known does not take (known is given
// the voice id) and an empty one, with a *ConfigError naming the member
// where the configuration gave it ("session.voice" or
// "session.audio.output.voice"). A configuration without a voice passes.
func (s *SessionConfig) CheckVoice(known func(id string) bool) error {
	if !s.GivesVoice() {
		return nil
	}
	var v Voice
	if s.Audio != nil && s.Audio.Output != nil {
		v = s.Audio.Output.Voice
	}
	if v.IsZero() {
		return configErr(s.VoiceParam(), "%s must name a voice", "session."+s.VoiceParam())
	}
	if !known(v.String()) {
		return configErr(s.VoiceParam(), "unknown voice %q; GET /v1/tts/voices lists the voices (ids are case-insensitive)", v.String())
	}
	return nil
}

// withoutPlaced returns the audio member without the voice and the turn
// detection (nil when nothing else is left), for ShapeTopLevel.
func (a *AudioConfig) withoutPlaced() *AudioConfig {
	if a == nil {
		return nil
	}
	c := AudioConfig{}
	if in := a.Input; in != nil {
		cp := *in
		cp.TurnDetection = Nullable[TurnDetection]{}
		if cp.Format != nil || cp.Transcription.Present || cp.NoiseReduction != nil || len(cp.Extra) > 0 {
			c.Input = &cp
		}
	}
	if out := a.Output; out != nil {
		cp := *out
		cp.Voice = Voice{}
		if cp.Format != nil || cp.Speed != nil || len(cp.Extra) > 0 {
			c.Output = &cp
		}
	}
	if c.Input == nil && c.Output == nil {
		return nil
	}
	return &c
}

// appendMember adds "key":val to the JSON object obj.
func appendMember(obj []byte, key string, val []byte) []byte {
	out := append([]byte(nil), obj[:len(obj)-1]...)
	if len(obj) > 2 {
		out = append(out, ',')
	}
	out = appendString(out, key)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, '}')
}
