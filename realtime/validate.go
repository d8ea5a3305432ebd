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
	a := s.Audio
	if a == nil {
		return nil
	}
	if a.Input != nil {
		if err := a.Input.Format.Validate(); err != nil {
			return configErr("audio.input.format", "%v", err)
		}
		if td := a.Input.TurnDetection; td.Value != nil {
			if td.Value.Type != TurnServerVAD && td.Value.Type != TurnSemanticVAD {
				return configErr("audio.input.turn_detection.type", "turn detection %q is not supported", td.Value.Type)
			}
			if t := td.Value.Threshold; t != nil && (*t < 0 || *t > 1) {
				return configErr("audio.input.turn_detection.threshold", "threshold must be between 0 and 1")
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
