package control

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/numbers"
	"switchboard/realtime"
	"switchboard/webhook"
)

// Authorizer checks an API key for a route (auth.KeyService).
type Authorizer interface {
	Authorize(ctx context.Context, token string, route httpx.Route) (*httpx.Principal, error)
}

// Calls finds live calls (call.Manager).
type Calls interface {
	Get(id string) (*call.Call, bool)
}

// CallsFunc adapts a function to Calls (the manager is built after the
// router that needs this service).
type CallsFunc func(id string) (*call.Call, bool)

// Get calls f.
func (f CallsFunc) Get(id string) (*call.Call, bool) { return f(id) }

// Numbers resolves numbers and their webhooks (numbers.Service).
type Numbers interface {
	Resolve(ctx context.Context, e164 string) (*numbers.Resolved, error)
	Webhook(ctx context.Context, numberID string) (*numbers.WebhookDetails, error)
}

// Webhooks delivers signed events (webhook.Dispatcher).
type Webhooks interface {
	Deliver(ctx context.Context, t webhook.Target, ev webhook.Event) (webhook.Result, error)
	DeliverAsync(t webhook.Target, ev webhook.Event, done func(webhook.Result, error)) error
}

// Options configure a Service. Calls, Keys, Secrets, Numbers, Webhooks,
// Runtime and Engines are required.
type Options struct {
	Calls    Calls
	Keys     Authorizer
	Secrets  *auth.ClientSecrets
	Numbers  Numbers
	Webhooks Webhooks
	Runtime  *agent.Runtime
	// Engines by name; Engine picks the one controlled calls and direct
	// sessions use (default: "upstream" when present, else "echo").
	Engines map[string]realtime.Engine
	Engine  string
	// RingTimeout is how long a webhook-routed call rings waiting for a
	// controller (default 20 s).
	RingTimeout time.Duration
	// Grace is how long a call goes on after its controller dropped
	// (default 30 s).
	Grace time.Duration
	// TransferAcceptTimeout bounds how long the refer endpoint waits for
	// the caller's side to accept the REFER (default 10 s).
	TransferAcceptTimeout time.Duration
	// PingInterval of the realtime sockets (default 20 s).
	PingInterval time.Duration
	Log          zerolog.Logger
}

// Service serves the realtime and call-control endpoints and makes the
// conversations of webhook-routed calls.
type Service struct {
	opts    Options
	log     zerolog.Logger
	callWS  *realtime.Handler
	direct  *realtime.Handler
	engine  realtime.Engine
	mu      sync.Mutex
	calls   map[string]*entry
	wg      sync.WaitGroup
	closing chan struct{}
	once    sync.Once
}

// entry is a webhook-routed call this service owns.
type entry struct {
	cc       *agent.ControlledCall
	teamID   string
	numberID string

	mu     sync.Mutex
	target *webhook.Target
}

func (e *entry) setTarget(t webhook.Target) {
	e.mu.Lock()
	e.target = &t
	e.mu.Unlock()
}

func (e *entry) getTarget() *webhook.Target {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.target
}

// NewService returns the service.
func NewService(opts Options) (*Service, error) {
	if opts.Calls == nil || opts.Keys == nil || opts.Secrets == nil || opts.Numbers == nil || opts.Webhooks == nil ||
		opts.Runtime == nil || len(opts.Engines) == 0 {
		return nil, errors.New("control: calls, keys, secrets, numbers, webhooks, runtime and engines are required")
	}
	if opts.Engine == "" {
		opts.Engine = agent.EngineEcho
		if _, ok := opts.Engines[agent.EngineUpstream]; ok {
			opts.Engine = agent.EngineUpstream
		}
	}
	eng, ok := opts.Engines[opts.Engine]
	if !ok {
		return nil, errors.New("control: engine " + opts.Engine + " is not configured")
	}
	if opts.RingTimeout <= 0 {
		opts.RingTimeout = agent.DefaultRingTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = agent.DefaultControllerGrace
	}
	if opts.TransferAcceptTimeout <= 0 {
		opts.TransferAcceptTimeout = 10 * time.Second
	}
	s := &Service{opts: opts, log: opts.Log, engine: eng, calls: map[string]*entry{}, closing: make(chan struct{})}
	wlog := opts.Log.With().Str("component", "realtime_ws").Logger()
	s.callWS = realtime.NewHandler(attachEngine{}, realtime.HandlerOptions{
		Config:       func(*http.Request) (realtime.SessionConfig, error) { return realtime.SessionConfig{}, nil },
		PingInterval: opts.PingInterval, Logger: &wlog,
	})
	s.direct = realtime.NewHandler(eng, realtime.HandlerOptions{
		Config:       func(r *http.Request) (realtime.SessionConfig, error) { return configFrom(r.Context()), nil },
		PingInterval: opts.PingInterval, Logger: &wlog,
	})
	return s, nil
}

// Routes are the realtime and call-control routes. GET /v1/realtime
// authenticates inside its handler (API key or client secret).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodGet, Pattern: "/v1/realtime", Endpoint: auth.EndpointRealtime, Access: httpx.Public, Handler: s.serveRealtime},
		{Method: http.MethodPost, Pattern: "/v1/realtime/client_secrets", Endpoint: auth.EndpointClientSecrets, Handler: s.createSecret},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/refer", Endpoint: auth.EndpointCalls, Handler: s.refer},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/hangup", Endpoint: auth.EndpointCalls, Handler: s.hangup},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/dtmf", Endpoint: auth.EndpointCalls, Handler: s.dtmf},
	}
}

// Conversation is the conversation of a call to a webhook-routed number
// (res is the number the call matched).
func (s *Service) Conversation(c *call.Call, res *numbers.Resolved) call.Conversation {
	e := &entry{teamID: res.TeamID, numberID: res.NumberID}
	e.cc = s.opts.Runtime.Controlled(c, agent.ControlledOptions{
		Engine: s.opts.Engine, RingTimeout: s.opts.RingTimeout, Grace: s.opts.Grace,
		Announce: func(ctx context.Context) { s.announce(ctx, c, e) },
		OnClose:  func(by string) { s.ended(c, e, by) },
	})
	s.mu.Lock()
	s.calls[c.ID()] = e
	s.mu.Unlock()
	return e.cc
}

func (s *Service) entry(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// Close drops the realtime sockets and waits for the transfers it
// follows. It is idempotent.
func (s *Service) Close() error {
	s.once.Do(func() {
		close(s.closing)
		_ = s.callWS.Close()
		_ = s.direct.Close()
		s.wg.Wait()
	})
	return nil
}
