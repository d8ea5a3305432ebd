package realtime

import "fmt"

// Reasoning effort values of the session's reasoning.effort.
const (
	// EffortHigh is the default reasoning effort.
	EffortHigh = "high"
	// EffortNone turns reasoning off.
	EffortNone = "none"
)

// Reasoning is the session's reasoning member: {"effort":"high"|"none"}.
type Reasoning struct {
	// Effort is EffortHigh or EffortNone.
	Effort string `json:"effort,omitempty"`
}

// ConfigError is a session configuration the spec does not allow: Param
// names the member as a session.update path ("session.audio.input.format").
type ConfigError struct {
	Param   string
	Message string
}

func (e *ConfigError) Error() string { return e.Param + ": " + e.Message }

func configErr(param, format string, args ...any) *ConfigError {
	return &ConfigError{Param: "session." + param, Message: fmt.Sprintf(format, args...)}
}

// Validate checks the members of a session configuration (or of a
// session.update body) that every engine must refuse: the session type,
// the audio formats, the turn detection type and threshold and the
// reasoning effort value. It returns nil or a *ConfigError. Which model
// may be named, and whether it reasons, is the caller's to check.
func (s *SessionConfig) Validate() error {
	if s.Type != "" && s.Type != "realtime" {
		return configErr("type", "session type %q is not supported (only realtime)", s.Type)
	}
	if r := s.Reasoning; r != nil && r.Effort != EffortHigh && r.Effort != EffortNone {
		return configErr("reasoning.effort", "reasoning.effort must be high or none, not %q", r.Effort)
	}
	switch s.placed.conflict {
	case topVoice:
		return configErr(topVoice, "session.voice and session.audio.output.voice name two voices; give the voice in one place (or the same in both)")
	case topTurnDetection:
		return configErr(topTurnDetection, "session.turn_detection and session.audio.input.turn_detection differ; give the turn detection in one place (or the same in both)")
	}
	a := s.Audio
	if a == nil {
		return nil
	}
	if a.Input != nil {
		if err := a.Input.Format.Validate(); err != nil {
			return configErr("audio.input.format", "%v", err)
		}
		if td := a.Input.TurnDetection; td.Value != nil {
			at := s.turnDetectionParam()
			if td.Value.Type != TurnServerVAD && td.Value.Type != TurnSemanticVAD {
				return configErr(at+".type", "turn detection %q is not supported (server_vad, semantic_vad, or turn_detection null for manual commit)", td.Value.Type)
			}
			if t := td.Value.Threshold; t != nil && (*t < 0 || *t > 1) {
				return configErr(at+".threshold", "threshold must be between 0 and 1")
			}
			for _, m := range []struct {
				name string
				v    *int
			}{{"prefix_padding_ms", td.Value.PrefixPaddingMs}, {"silence_duration_ms", td.Value.SilenceDurationMs}, {"idle_timeout_ms", td.Value.IdleTimeoutMs}} {
				if m.v != nil && *m.v < 0 {
					return configErr(at+"."+m.name, "%s must not be negative", m.name)
				}
			}
		}
	}
	if a.Output != nil {
		if err := a.Output.Format.Validate(); err != nil {
			return configErr("audio.output.format", "%v", err)
		}
	}
	return nil
}
