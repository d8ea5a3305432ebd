package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
}

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
	return c, nil
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
