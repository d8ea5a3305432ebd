package agent

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/dtmf"
	"switchboard/store"
)

// agentJSON is the API form of an agent.
type agentJSON struct {
	AgentID string `json:"agent_id"`
	TeamID  string `json:"team_id"`
	Name    string `json:"name"`
	Settings
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func toJSON(c *Config) agentJSON {
	st := c.Settings
	st.defaultPrompts()
	return agentJSON{AgentID: c.ID, TeamID: c.TeamID, Name: c.Name, Settings: st,
		CreatedAt: c.CreateTime.UTC().Format(time.RFC3339), UpdatedAt: c.UpdateTime.UTC().Format(time.RFC3339)}
}

// request is the body of POST and PATCH: a field that is absent (or null)
// is left as it is (PATCH) or defaulted (POST). On PATCH an empty
// instructions, language or greeting clears it.
type request struct {
	Name         *string `json:"name"`
	Instructions *string `json:"instructions"`
	Voice        *string `json:"voice"`
	Model        *string `json:"model"`
	Language     *string `json:"language"`
	Greeting     *string `json:"greeting"`

	Engine          *string           `json:"engine"`
	Tools           *[]Tool           `json:"tools"`
	TransferTargets *[]TransferTarget `json:"transfer_targets"`
	Fallback        *string           `json:"fallback"`
	FallbackURI     *string           `json:"fallback_uri"`
	Apology         *string           `json:"apology"`
	ComfortPrompt   *string           `json:"comfort_prompt"`
	Announcement    *string           `json:"transfer_announcement"`
	IdleTimeoutMS   *int              `json:"idle_timeout_ms"`
	MaxDurationS    *int              `json:"max_duration_s"`
	DTMF            *dtmf.Policy      `json:"dtmf"`
	DTMFInband      *string           `json:"dtmf_inband"`
	Recording       *Recording        `json:"recording"`
}

// apply validates the fields of req that are set and writes them into c.
func (req *request) apply(r *http.Request, c *Config) error {
	var err error
	if req.Name != nil {
		if c.Name, err = checkName(*req.Name); err != nil {
			return err
		}
	}
	if req.Instructions != nil {
		if err := checkInstructions(*req.Instructions); err != nil {
			return err
		}
		c.Settings.Instructions = *req.Instructions
	}
	if req.Voice != nil {
		if c.Settings.Voice, err = checkVoice(*req.Voice); err != nil {
			return err
		}
	}
	if req.Model != nil {
		if err := checkModel(*req.Model); err != nil {
			return err
		}
		if err := httpx.RequireModel(r.Context(), *req.Model); err != nil {
			return err
		}
		c.Settings.Model = *req.Model
	}
	if req.Language != nil {
		if c.Settings.Language, err = checkLanguage(*req.Language); err != nil {
			return err
		}
	}
	if req.Greeting != nil {
		if err := checkGreeting(*req.Greeting); err != nil {
			return err
		}
		c.Settings.Greeting = *req.Greeting
	}
	return req.applyRuntime(c)
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	var req request
	if err := httpx.Decode(r, httpx.MaxBody, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return httpx.BadRequest("name", "name is required")
	}
	now := s.now().UTC()
	c := &Config{ID: httpx.NewID("ag"), TeamID: httpx.TeamOf(r.Context()), CreateTime: now, UpdateTime: now,
		Settings: Settings{Voice: DefaultVoice, Model: DefaultModel, Engine: EngineEcho, Fallback: FallbackRefuse}}
	if err := req.apply(r, c); err != nil {
		return err
	}
	if err := s.checkToolAddresses(&req); err != nil {
		return err
	}
	rec, err := c.record()
	if err != nil {
		return err
	}
	err = s.st.Tx(r.Context(), func(tx store.Store) error {
		if err := tx.Agents().Create(r.Context(), rec); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "agent.create", "agent/"+c.ID, fmt.Sprintf("created agent %q", c.Name))
	})
	if err != nil {
		return fmt.Errorf("create agent: %w", err)
	}
	s.saved(c)
	httpx.WriteJSON(w, http.StatusOK, toJSON(c))
	return nil
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	c, err := getOwned(r.Context(), s.st, r.PathValue("agent_id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, toJSON(c))
	return nil
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	p, err := httpx.PageOf(r.URL.Query(), "page_size", "page_token")
	if err != nil {
		return err
	}
	recs, next, err := s.st.Agents().List(r.Context(), httpx.TeamOf(r.Context()), p)
	if err != nil {
		return pageErr(err)
	}
	out := struct {
		Agents        []agentJSON `json:"agents"`
		NextPageToken string      `json:"next_page_token,omitempty"`
	}{Agents: make([]agentJSON, 0, len(recs)), NextPageToken: next}
	for _, a := range recs {
		c, err := fromRecord(a)
		if err != nil {
			return err
		}
		out.Agents = append(out.Agents, toJSON(c))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) update(w http.ResponseWriter, r *http.Request) error {
	var req request
	if err := httpx.Decode(r, httpx.MaxBody, &req); err != nil {
		return err
	}
	var c *Config
	err := s.st.Tx(r.Context(), func(tx store.Store) error {
		var err error
		if c, err = getOwned(r.Context(), tx, r.PathValue("agent_id")); err != nil {
			return err
		}
		if err := req.apply(r, c); err != nil {
			return err
		}
		if err := s.checkToolAddresses(&req); err != nil {
			return err
		}
		c.UpdateTime = s.now().UTC()
		rec, err := c.record()
		if err != nil {
			return err
		}
		if err := tx.Agents().Update(r.Context(), rec); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "agent.update", "agent/"+c.ID, fmt.Sprintf("updated agent %q", c.Name))
	})
	if err != nil {
		return fmt.Errorf("update agent: %w", err)
	}
	s.saved(c)
	httpx.WriteJSON(w, http.StatusOK, toJSON(c))
	return nil
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("agent_id")
	err := s.st.Tx(r.Context(), func(tx store.Store) error {
		c, err := getOwned(r.Context(), tx, id)
		if err != nil {
			return err
		}
		n, err := tx.Numbers().CountByAgent(r.Context(), id)
		if err != nil {
			return err
		}
		if n > 0 {
			return httpx.Conflict("agent_id", "agent %s is the route of %d phone number(s); route them elsewhere first", id, n)
		}
		if err := tx.Agents().Delete(r.Context(), id); err != nil {
			return err
		}
		return httpx.Audit(r.Context(), tx, "agent.delete", "agent/"+id, fmt.Sprintf("deleted agent %q", c.Name))
	})
	if err != nil {
		return fmt.Errorf("delete agent: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (s *Service) saved(c *Config) {
	if s.onSave != nil {
		s.onSave(c)
	}
}

// Each calls fn for every agent of every team (warming caches at start).
func (s *Service) Each(ctx context.Context, fn func(*Config)) error {
	return s.st.Agents().Each(ctx, func(a *store.Agent) error {
		c, err := fromRecord(a)
		if err != nil {
			return err
		}
		fn(c)
		return nil
	})
}
