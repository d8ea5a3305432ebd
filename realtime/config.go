package realtime

import (
	"encoding/json"
	"fmt"
	"maps"
)

// Audio format types of the session's audio.input.format and
// audio.output.format.
const (
	// FormatPCM is 16-bit little-endian mono PCM, 24 kHz (the default).
	FormatPCM = "audio/pcm"
	// FormatPCMU is G.711 µ-law at 8 kHz.
	FormatPCMU = "audio/pcmu"
	// FormatPCMA is G.711 A-law at 8 kHz.
	FormatPCMA = "audio/pcma"
)

// Turn detection types.
const (
	// TurnServerVAD is energy/VAD based turn detection on the server.
	TurnServerVAD = "server_vad"
	// TurnSemanticVAD is model-based turn detection (providers only).
	TurnSemanticVAD = "semantic_vad"
)

// SessionConfig is the realtime session configuration carried by
// session.update, session.created and session.updated. Members it does not
// model are kept in Extra. Pointer, slice and Nullable members distinguish
// "absent" (leave as is) from "set" in session.update; see Merge.
type SessionConfig struct {
	// Type is "realtime" for realtime sessions.
	Type string `json:"type,omitempty"`
	// Object is "realtime.session" in server events.
	Object string `json:"object,omitempty"`
	// ID is the server's session id.
	ID string `json:"id,omitempty"`
	// Model is the realtime model.
	Model string `json:"model,omitempty"`
	// OutputModalities is ["audio"] (default) or ["text"].
	OutputModalities []string `json:"output_modalities,omitzero"`
	// Instructions is the system prompt; a pointer to "" clears it.
	Instructions *string `json:"instructions,omitempty"`
	// Audio holds input and output audio settings.
	Audio *AudioConfig `json:"audio,omitempty"`
	// Tools are the functions the model may call; an empty non-nil slice
	// clears them.
	Tools []Tool `json:"tools,omitzero"`
	// ToolChoice is "auto", "none", "required" or an object; kept raw.
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	// Temperature is the sampling temperature, where a provider takes it.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxOutputTokens is an integer or "inf"; kept raw.
	MaxOutputTokens json.RawMessage `json:"max_output_tokens,omitempty"`
	// Reasoning is the reasoning effort, for the models that reason.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`

	// placed is where a decoded configuration gave its voice and turn
	// detection (placement.go); shape is where MarshalJSON writes them.
	placed placement
	shape  SessionShape
}

// MarshalJSON writes the config with its extra members. The voice and
// the turn detection go where its shape says (Shaped): in both
// placements by default, the spec's (voice, turn_detection) and the
// nested one (audio.output.voice, audio.input.turn_detection).
func (s SessionConfig) MarshalJSON() ([]byte, error) {
	type plain SessionConfig
	p, extra := plain(s), s.Extra
	if _, ok := extra[topVoice]; ok {
		extra = maps.Clone(extra)
		delete(extra, topVoice)
	}
	if _, ok := extra[topTurnDetection]; ok {
		extra = maps.Clone(extra)
		delete(extra, topTurnDetection)
	}
	if s.shape == ShapeTopLevel {
		p.Audio = s.Audio.withoutPlaced()
	}
	b, err := marshalWithExtra(p, extra)
	if err != nil || s.shape == ShapeNested || s.Audio == nil {
		return b, err
	}
	if out := s.Audio.Output; out != nil && !out.Voice.IsZero() {
		v, err := json.Marshal(out.Voice)
		if err != nil {
			return nil, err
		}
		b = appendMember(b, topVoice, v)
	}
	if in := s.Audio.Input; in != nil && in.TurnDetection.Present {
		td, err := json.Marshal(in.TurnDetection)
		if err != nil {
			return nil, err
		}
		b = appendMember(b, topTurnDetection, td)
	}
	return b, nil
}

// UnmarshalJSON reads the config, keeping unknown members in Extra. A
// voice or turn_detection at the top level (the spec's placement) is
// moved to its nested place; given in both places with two values, it
// is a conflict that Validate reports.
func (s *SessionConfig) UnmarshalJSON(b []byte) error {
	type plain SessionConfig
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*s = SessionConfig(p)
	var top struct {
		Voice         *Voice                  `json:"voice"`
		TurnDetection Nullable[TurnDetection] `json:"turn_detection,omitzero"`
	}
	_, v := extra[topVoice]
	_, td := extra[topTurnDetection]
	if v || td {
		if err := json.Unmarshal(b, &top); err != nil {
			return err
		}
		delete(extra, topVoice)
		delete(extra, topTurnDetection)
		if len(extra) == 0 {
			extra = nil
		}
	}
	s.Extra = extra
	s.fold(top.Voice, top.TurnDetection)
	return nil
}

// AudioConfig is the session's audio member.
type AudioConfig struct {
	// Input configures audio from the caller to the model.
	Input *AudioInput `json:"input,omitempty"`
	// Output configures audio from the model.
	Output *AudioOutput `json:"output,omitempty"`
}

// AudioFormat is an audio format object: {"type":"audio/pcm","rate":24000},
// {"type":"audio/pcmu"} or {"type":"audio/pcma"}.
type AudioFormat struct {
	// Type is FormatPCM, FormatPCMU or FormatPCMA.
	Type string `json:"type,omitempty"`
	// Rate is the sample rate; only audio/pcm carries it (24000).
	Rate int `json:"rate,omitempty"`
}

// PCM24k is the default audio format, audio/pcm at 24 kHz.
func PCM24k() *AudioFormat { return &AudioFormat{Type: FormatPCM, Rate: 24000} }

// SampleRate returns the format's sample rate in Hz.
func (f *AudioFormat) SampleRate() int {
	switch {
	case f == nil:
		return 24000
	case f.Type == FormatPCMU || f.Type == FormatPCMA:
		return 8000
	case f.Rate > 0:
		return f.Rate
	}
	return 24000
}

// BytesPerMs returns how many bytes one millisecond of audio takes.
func (f *AudioFormat) BytesPerMs() int {
	if f != nil && (f.Type == FormatPCMU || f.Type == FormatPCMA) {
		return 8
	}
	return f.SampleRate() / 1000 * 2
}

// FormatType returns f.Type, or FormatPCM for a nil or empty format.
func (f *AudioFormat) FormatType() string {
	if f == nil || f.Type == "" {
		return FormatPCM
	}
	return f.Type
}

var errBadFormat = fmt.Errorf("unsupported audio format")

// Validate reports whether f is one of the three formats of the spec.
func (f *AudioFormat) Validate() error {
	if f == nil {
		return nil
	}
	switch f.Type {
	case FormatPCM, "":
		if f.Rate != 0 && f.Rate != 24000 {
			return fmt.Errorf("%w: audio/pcm at %d Hz (only 24000)", errBadFormat, f.Rate)
		}
		return nil
	case FormatPCMU, FormatPCMA:
		return nil
	}
	return fmt.Errorf("%w: %q", errBadFormat, f.Type)
}

// AudioInput is audio.input.
type AudioInput struct {
	// Format is the format of input_audio_buffer.append audio.
	Format *AudioFormat `json:"format,omitempty"`
	// Transcription turns input transcription on (set), off (null) or
	// leaves it (absent).
	Transcription Nullable[Transcription] `json:"transcription,omitzero"`
	// NoiseReduction is kept raw ({"type":"near_field"} or null).
	NoiseReduction json.RawMessage `json:"noise_reduction,omitempty"`
	// TurnDetection is server VAD (set), manual commit (null) or unchanged
	// (absent).
	TurnDetection Nullable[TurnDetection] `json:"turn_detection,omitzero"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the object with its extra members.
func (a AudioInput) MarshalJSON() ([]byte, error) {
	type plain AudioInput
	return marshalWithExtra(plain(a), a.Extra)
}

// UnmarshalJSON reads the object, keeping unknown members in Extra.
func (a *AudioInput) UnmarshalJSON(b []byte) error {
	type plain AudioInput
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*a = AudioInput(p)
	a.Extra = extra
	return nil
}

// AudioOutput is audio.output.
type AudioOutput struct {
	// Format is the format of response.output_audio.delta audio.
	Format *AudioFormat `json:"format,omitempty"`
	// Voice is a built-in voice name or a custom voice id.
	Voice Voice `json:"voice,omitzero"`
	// Speed is the playback speed multiplier (0.25 to 1.5).
	Speed *float64 `json:"speed,omitempty"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the object with its extra members.
func (a AudioOutput) MarshalJSON() ([]byte, error) {
	type plain AudioOutput
	return marshalWithExtra(plain(a), a.Extra)
}

// UnmarshalJSON reads the object, keeping unknown members in Extra.
func (a *AudioOutput) UnmarshalJSON(b []byte) error {
	type plain AudioOutput
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*a = AudioOutput(p)
	a.Extra = extra
	return nil
}

// Voice is the voice member: a built-in name ("marin") or a custom voice
// object ({"id":"voice_1234"}).
type Voice struct {
	// Name is a built-in voice name.
	Name string
	// ID is a custom voice id; when set it wins over Name.
	ID string
}

// IsZero reports whether no voice is set, for omitzero.
func (v Voice) IsZero() bool { return v.Name == "" && v.ID == "" }

// String returns the id or the name.
func (v Voice) String() string {
	if v.ID != "" {
		return v.ID
	}
	return v.Name
}

// MarshalJSON writes a string or {"id":…}.
func (v Voice) MarshalJSON() ([]byte, error) {
	if v.ID != "" {
		return json.Marshal(struct {
			ID string `json:"id"`
		}{v.ID})
	}
	return json.Marshal(v.Name)
}

// UnmarshalJSON reads a string or {"id":…}.
func (v *Voice) UnmarshalJSON(b []byte) error {
	*v = Voice{}
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		v.ID = o.ID
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &v.Name)
}

// Transcription is audio.input.transcription.
type Transcription struct {
	// Model is the transcription model.
	Model string `json:"model,omitempty"`
	// Language is an ISO-639-1 hint.
	Language string `json:"language,omitempty"`
	// Prompt guides the transcription.
	Prompt string `json:"prompt,omitempty"`
}

// TurnDetection is audio.input.turn_detection.
type TurnDetection struct {
	// Type is TurnServerVAD or TurnSemanticVAD.
	Type string `json:"type"`
	// Threshold is the VAD activation threshold, 0.0 to 1.0.
	Threshold *float64 `json:"threshold,omitempty"`
	// PrefixPaddingMs is the audio kept before detected speech.
	PrefixPaddingMs *int `json:"prefix_padding_ms,omitempty"`
	// SilenceDurationMs is the silence that ends a turn.
	SilenceDurationMs *int `json:"silence_duration_ms,omitempty"`
	// IdleTimeoutMs starts a proactive turn after that much silence.
	IdleTimeoutMs *int `json:"idle_timeout_ms,omitempty"`
	// CreateResponse makes the server answer each turn (default true).
	CreateResponse *bool `json:"create_response,omitempty"`
	// InterruptResponse cancels a response when the user starts to speak
	// (default true).
	InterruptResponse *bool `json:"interrupt_response,omitempty"`
	// Eagerness is semantic_vad's eagerness.
	Eagerness string `json:"eagerness,omitempty"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the object with its extra members.
func (t TurnDetection) MarshalJSON() ([]byte, error) {
	type plain TurnDetection
	return marshalWithExtra(plain(t), t.Extra)
}

// UnmarshalJSON reads the object, keeping unknown members in Extra.
func (t *TurnDetection) UnmarshalJSON(b []byte) error {
	type plain TurnDetection
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*t = TurnDetection(p)
	t.Extra = extra
	return nil
}

// Tool is one entry of tools: {"type":"function","name","description",
// "parameters"} (other tool types keep their members in Extra).
type Tool struct {
	// Type is "function" (or "mcp").
	Type string `json:"type"`
	// Name is the function name.
	Name string `json:"name,omitempty"`
	// Description tells the model when to call it.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Extra holds members not modelled above.
	Extra Extra `json:"-"`
}

// MarshalJSON writes the object with its extra members.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	return marshalWithExtra(plain(t), t.Extra)
}

// UnmarshalJSON reads the object, keeping unknown members in Extra.
func (t *Tool) UnmarshalJSON(b []byte) error {
	type plain Tool
	var p plain
	extra, err := unmarshalWithExtra(b, &p)
	if err != nil {
		return err
	}
	*t = Tool(p)
	t.Extra = extra
	return nil
}

// InputFormat returns the input audio format (PCM 24 kHz when unset).
func (s *SessionConfig) InputFormat() *AudioFormat {
	if s.Audio != nil && s.Audio.Input != nil && s.Audio.Input.Format != nil {
		return s.Audio.Input.Format
	}
	return PCM24k()
}

// OutputFormat returns the output audio format (PCM 24 kHz when unset).
func (s *SessionConfig) OutputFormat() *AudioFormat {
	if s.Audio != nil && s.Audio.Output != nil && s.Audio.Output.Format != nil {
		return s.Audio.Output.Format
	}
	return PCM24k()
}

// TurnDetection returns the turn detection in force, or nil for manual
// commit (turn_detection null). An absent member means server VAD with
// defaults, as on a new session.
func (s *SessionConfig) TurnDetection() *TurnDetection {
	if s.Audio == nil || s.Audio.Input == nil || !s.Audio.Input.TurnDetection.Present {
		return &TurnDetection{Type: TurnServerVAD}
	}
	return s.Audio.Input.TurnDetection.Value
}

// Merge applies the members present in u (a session.update body) on top of
// s, as the spec says: only present members change; "" clears instructions,
// [] clears tools, null clears turn_detection.
func (s *SessionConfig) Merge(u SessionConfig) {
	if u.Type != "" {
		s.Type = u.Type
	}
	if u.Model != "" {
		s.Model = u.Model
	}
	if u.OutputModalities != nil {
		s.OutputModalities = u.OutputModalities
	}
	if u.Instructions != nil {
		s.Instructions = u.Instructions
	}
	if u.Tools != nil {
		s.Tools = u.Tools
	}
	if u.ToolChoice != nil {
		s.ToolChoice = u.ToolChoice
	}
	if u.Temperature != nil {
		s.Temperature = u.Temperature
	}
	if u.MaxOutputTokens != nil {
		s.MaxOutputTokens = u.MaxOutputTokens
	}
	if u.Reasoning != nil {
		r := *u.Reasoning
		s.Reasoning = &r
	}
	for k, v := range u.Extra {
		if s.Extra == nil {
			s.Extra = Extra{}
		}
		s.Extra[k] = v
	}
	if u.Audio == nil {
		return
	}
	if s.Audio == nil {
		s.Audio = &AudioConfig{}
	}
	if in := u.Audio.Input; in != nil {
		if s.Audio.Input == nil {
			s.Audio.Input = &AudioInput{}
		}
		d := s.Audio.Input
		if in.Format != nil {
			d.Format = in.Format
		}
		if in.Transcription.Present {
			d.Transcription = in.Transcription
		}
		if in.NoiseReduction != nil {
			d.NoiseReduction = in.NoiseReduction
		}
		if in.TurnDetection.Present {
			d.TurnDetection = in.TurnDetection
		}
		for k, v := range in.Extra {
			if d.Extra == nil {
				d.Extra = Extra{}
			}
			d.Extra[k] = v
		}
	}
	if out := u.Audio.Output; out != nil {
		if s.Audio.Output == nil {
			s.Audio.Output = &AudioOutput{}
		}
		d := s.Audio.Output
		if out.Format != nil {
			d.Format = out.Format
		}
		if !out.Voice.IsZero() {
			d.Voice = out.Voice
		}
		if out.Speed != nil {
			d.Speed = out.Speed
		}
		for k, v := range out.Extra {
			if d.Extra == nil {
				d.Extra = Extra{}
			}
			d.Extra[k] = v
		}
	}
}

// Clone returns a deep enough copy of s for Merge to leave s untouched.
func (s SessionConfig) Clone() SessionConfig {
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	var c SessionConfig
	if json.Unmarshal(b, &c) != nil {
		return s
	}
	return c
}
