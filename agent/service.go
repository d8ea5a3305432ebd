package agent

import (
	"switchboard/webhook"

	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Options configure a Service.
type Options struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnSave, when set, sees every agent after it was created or changed
	// (the greeting cache renders its greeting then).
	OnSave func(*Config)
	// Addresses says which addresses tool URLs may name (the zero value:
	// no link-local or cloud metadata address).
	Addresses webhook.AddressPolicy
}

// Service is the agents module of the API and the runtime's way to read an
// agent.
type Service struct {
	st     store.Store
	now    func() time.Time
	onSave func(*Config)
	addrs  webhook.AddressPolicy
}

// NewService returns the agents module over st.
func NewService(st store.Store, opts Options) *Service {
	s := &Service{st: st, now: opts.Now, onSave: opts.OnSave, addrs: opts.Addresses}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Endpoint is the ACL endpoint name of the agents routes.
const Endpoint = "agents"

// Routes are the /v1/agents routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodPost, Pattern: "/v1/agents", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.create},
		{Method: http.MethodGet, Pattern: "/v1/agents", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.list},
		{Method: http.MethodGet, Pattern: "/v1/agents/{agent_id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.get},
		{Method: http.MethodPatch, Pattern: "/v1/agents/{agent_id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.update},
		{Method: http.MethodDelete, Pattern: "/v1/agents/{agent_id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.delete},
	}
}

// getOwned reads agent id of the caller's team: another team's agent is
// as unknown as a missing one.
func getOwned(ctx context.Context, st store.Store, id string) (*Config, error) {
	a, err := st.Agents().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.TeamID != httpx.TeamOf(ctx)) {
		return nil, httpx.NotFound("no agent %s", id)
	}
	if err != nil {
		return nil, err
	}
	return fromRecord(a)
}

func pageErr(err error) error {
	if errors.Is(err, store.ErrBadPageToken) {
		return httpx.BadRequest("page_token", "page_token was not issued by this server")
	}
	return fmt.Errorf("list agents: %w", err)
}
