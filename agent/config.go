package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"switchboard/dtmf"
	"switchboard/store"
)

// ErrUnknownAgent means no agent has the given id.
var ErrUnknownAgent = errors.New("unknown agent")

// Settings are an agent's behaviour, stored as the JSON document of its
// store record. Later issues add fields here (engine, tools, transfer
// targets, fallback, idle_timeout_ms, max_duration_s) without a migration:
// a document that lacks a field reads as its zero value.
type Settings struct {
	// Instructions is the system prompt of the conversation.
	Instructions string `json:"instructions"`
	// Voice is a lower-case id of Voices.
	Voice string `json:"voice"`
	// Model is one of Models.
	Model string `json:"model"`
	// Language is a BCP-47 tag (en, en-US, pt-BR) or "auto"; empty: unset.
	Language string `json:"language,omitempty"`
	// Greeting is spoken when the call is answered; empty: none.
	Greeting string `json:"greeting,omitempty"`

	// Engine is the realtime engine: "echo" (the embedded offline
	// engine, the default), "upstream" (the configured provider), or
	// "loopback" (the line test: no model, the caller hears themself after
	// half a second).
	Engine string `json:"engine,omitempty"`
	// Tools are custom function tools the appliance calls over HTTPS.
	Tools []Tool `json:"tools,omitempty"`
	// TransferTargets are where the built-in transfer_call tool may send
	// the caller.
	TransferTargets []TransferTarget `json:"transfer_targets,omitempty"`
	// Fallback is what happens when the engine cannot be reached:
	// "refuse" (503 before answer, the default) or "apologize" (answer,
	// say Apology, then transfer to FallbackURI or hang up).
	Fallback    string `json:"fallback,omitempty"`
	FallbackURI string `json:"fallback_uri,omitempty"`
	// Apology is said by the fallback; empty: a stock sentence.
	Apology string `json:"apology,omitempty"`
	// ComfortPrompt is said once when a tool, a keypad send or a transfer
	// runs longer than the comfort delay, before the soft tone pattern;
	// "" for none. Absent from a stored agent: DefaultComfortPrompt.
	ComfortPrompt *string `json:"comfort_prompt,omitempty"`
	// TransferAnnouncement is said before the REFER of transfer_call; ""
	// for none. Absent from a stored agent: DefaultTransferAnnouncement.
	TransferAnnouncement *string `json:"transfer_announcement,omitempty"`
	// IdleTimeoutMS, when set, makes the agent check in after the caller
	// stayed silent that long once the assistant finished.
	IdleTimeoutMS int `json:"idle_timeout_ms,omitempty"`
	// MaxDurationS, when set, ends calls that last longer.
	MaxDurationS int `json:"max_duration_s,omitempty"`
	// DTMF is the keypad policy: model (digits buffered and sent as text),
	// redact (the model only learns how many digits) or route (keys act
	// without the model).
	DTMF dtmf.Policy `json:"dtmf,omitzero"`
	// DTMFInband says when the caller's audio is searched for DTMF tones:
	// "auto" (when the caller negotiated no telephone-event; the default
	// when empty), "on" (always, for gateways that send keys as tones even
	// though they negotiated events) or "off" (never).
	DTMFInband string `json:"dtmf_inband,omitempty"`
	// Recording, when enabled, records the agent's calls (a stereo WAV:
	// caller left, agent right). A number can ask for it too.
	Recording *Recording `json:"recording,omitempty"`
}

// Recording is the recording setting of an agent or a phone number:
// {"enabled": true}.
type Recording struct {
	Enabled bool `json:"enabled"`
}

// On reports whether r asks for recording (nil: no).
func (r *Recording) On() bool { return r != nil && r.Enabled }

// Tool is a custom function tool: the appliance POSTs the model's
// arguments to URL (signed like webhooks) and returns the response body to
// the model as the function's output.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	URL         string          `json:"url"`
	// TimeoutMS bounds the call; past it the model gets an error object.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// TransferTarget is a destination of the transfer_call tool. Without a
// mode the tool sends a REFER (blind); with one it runs a transfer of
// that mode (package transfer), and the model's summary of the call is
// added to the briefing.
type TransferTarget struct {
	Name        string `json:"name"`
	URI         string `json:"uri"`
	Description string `json:"description,omitempty"`
	// Headers are added to the REFER; their values may name the call's
	// variables ({{sip.X-Account-Id}}), rendered at the transfer.
	Headers map[string]string `json:"headers,omitempty"`
	// Mode is refer, bridge, warm or auto ("": a bare REFER).
	Mode string `json:"mode,omitempty"`
	// Replaces (mode refer) consults the target first, then REFERs the
	// caller with Replaces.
	Replaces bool `json:"replaces,omitempty"`
	// Briefing is what the human hears first (warm), before the model's
	// summary.
	Briefing string `json:"briefing,omitempty"`
	// HoldAudio is what the caller hears meanwhile: music, silence, a
	// WAV file or a prompt.
	HoldAudio string `json:"hold_audio,omitempty"`
	// Accept is dtmf or answer (warm).
	Accept string `json:"accept,omitempty"`
	// TimeoutS bounds the ring (0: the appliance's default).
	TimeoutS int `json:"timeout_s,omitempty"`
	// KeepListening keeps the model session, silent, once the caller is
	// bridged (for the transcript).
	KeepListening bool `json:"keep_listening,omitempty"`
}

// Engines and fallbacks.
const (
	EngineEcho         = "echo"
	EngineUpstream     = "upstream"
	EngineLoopback     = "loopback"
	FallbackRefuse     = "refuse"
	FallbackApologize  = "apologize"
	DefaultToolTimeout = 5000
)

// Config is one agent with its identity and settings, as the per-call
// runtime reads it.
type Config struct {
	ID         string
	TeamID     string
	Name       string
	Settings   Settings
	CreateTime time.Time
	UpdateTime time.Time
}

// fromRecord decodes a store record.
func fromRecord(a *store.Agent) (*Config, error) {
	c := &Config{ID: a.ID, TeamID: a.TeamID, Name: a.Name, CreateTime: a.CreateTime, UpdateTime: a.UpdateTime}
	if len(a.Doc) > 0 {
		if err := json.Unmarshal(a.Doc, &c.Settings); err != nil {
			return nil, fmt.Errorf("decode agent %s: %w", a.ID, err)
		}
	}
	if c.Settings.Voice == "" {
		c.Settings.Voice = DefaultVoice
	}
	if c.Settings.Model == "" {
		c.Settings.Model = DefaultModel
	}
	if c.Settings.Engine == "" {
		c.Settings.Engine = EngineEcho
	}
	if c.Settings.Fallback == "" {
		c.Settings.Fallback = FallbackRefuse
	}
	return c, nil
}

// Defaults of the sentences the appliance says itself.
const (
	DefaultComfortPrompt        = "One moment, please."
	DefaultTransferAnnouncement = "Please hold while I transfer your call."
)

// defaultPrompts fills the prompts a document does not set (the API shows
// the sentences in effect; the store keeps only what was set, so a new
// default reaches agents that never chose).
func (s *Settings) defaultPrompts() {
	if s.ComfortPrompt == nil {
		v := DefaultComfortPrompt
		s.ComfortPrompt = &v
	}
	if s.TransferAnnouncement == nil {
		v := DefaultTransferAnnouncement
		s.TransferAnnouncement = &v
	}
}

// ComfortText is the comfort prompt ("" for none).
func (s *Settings) ComfortText() string {
	if s.ComfortPrompt == nil {
		return DefaultComfortPrompt
	}
	return *s.ComfortPrompt
}

// AnnouncementText is the transfer announcement ("" for none).
func (s *Settings) AnnouncementText() string {
	if s.TransferAnnouncement == nil {
		return DefaultTransferAnnouncement
	}
	return *s.TransferAnnouncement
}

// ApologyText is the fallback's apology.
func (s *Settings) ApologyText() string {
	if s.Apology == "" {
		return DefaultApology
	}
	return s.Apology
}

// Prompts are the sentences the appliance says itself on the agent's calls
// (greeting unless it names variables, which each call renders with its
// own, comfort prompt, transfer announcement when the agent has transfer
// targets, apology when its fallback apologizes): the greeting cache
// renders them when the agent is saved, so a call plays them from the
// cache.
func (c *Config) Prompts() []string {
	s := &c.Settings
	var out []string
	for _, p := range []struct {
		text string
		used bool
	}{
		{s.Greeting, !HasPlaceholders(s.Greeting)}, // rendered per call
		{s.ComfortText(), true},
		{s.AnnouncementText(), len(s.TransferTargets) > 0},
		{s.ApologyText(), s.Fallback == FallbackApologize},
	} {
		if p.used && p.text != "" {
			out = append(out, p.text)
		}
	}
	return out
}

// record encodes c as a store record.
func (c *Config) record() (*store.Agent, error) {
	doc, err := json.Marshal(c.Settings)
	if err != nil {
		return nil, fmt.Errorf("encode agent %s: %w", c.ID, err)
	}
	return &store.Agent{ID: c.ID, TeamID: c.TeamID, Name: c.Name, Doc: doc, CreateTime: c.CreateTime, UpdateTime: c.UpdateTime}, nil
}

// Load reads the agent id for the runtime. An unknown id is ErrUnknownAgent.
func (s *Service) Load(ctx context.Context, id string) (*Config, error) {
	a, err := s.st.Agents().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("load agent %s: %w", id, ErrUnknownAgent)
	}
	if err != nil {
		return nil, fmt.Errorf("load agent %s: %w", id, err)
	}
	return fromRecord(a)
}

// Built-in tools every agent's calls have (their names are reserved).
const (
	ToolTransferCall = "transfer_call"
	ToolEndCall      = "end_call"
	ToolSendDTMF     = "send_dtmf"
)

// DefaultApology is said by the fallback when the agent sets none.
const DefaultApology = "Sorry, our assistant is not available right now. Please try again later."
