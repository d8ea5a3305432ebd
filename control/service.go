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
	"switchboard/conversation"
	"switchboard/realtime"
	"switchboard/store"
	"switchboard/transfer"
	"switchboard/webhook"
)

// Authorizer checks an API key for a route (auth.KeyService).
type Authorizer interface {
	Authorize(ctx context.Context, token string, route httpx.Route) (*httpx.Principal, error)
}

// Records reads stored call records (store.CallStore), so that a request
// about a call that has ended is told so (409) rather than 404.
type Records interface {
	Get(ctx context.Context, id string) (*store.Call, error)
}

// TokenCounter adds the model tokens a key's session used
// (auth.TokenMeter), for the key's tpm limit.
type TokenCounter interface {
	Add(keyID string, n int64, now time.Time)
}

// Calls finds live calls by id (FromRegistry).
type Calls interface {
	Get(id string) (Call, bool)
}

// Call is what the call-control endpoints steer (conversation.Routed).
type Call interface {
	// Phone is the call itself: its state, context and record.
	Phone() call.Phone
	// TeamID owns the call.
	TeamID() string
	// Attach reserves a webhook-routed call for a controller.
	Attach() (*conversation.ControllerSession, error)
	// Accept answers a ringing webhook-routed call with a session
	// configuration; Reject refuses it with a SIP status.
	Accept(cfg realtime.SessionConfig) error
	Reject(status int) error
	// Hangup ends the call with reason; headers go with the BYE (a Reason
	// among them replaces the appliance's).
	Hangup(reason string, headers ...call.Header)
	// SendDTMF plays digits to the caller's side.
	SendDTMF(ctx context.Context, digits string) error
	// Transfer sends REFER (with headers); the channel gets nil once it
	// was accepted.
	Transfer(target string, headers ...call.Header) <-chan error
	// SendToStream hands a webhook-routed call to a bot's stream and
	// returns the stream's sid once it is open.
	SendToStream(ctx context.Context, target call.StreamTarget) (string, error)
	// Handoff starts a transfer that may place a leg (bridged, warm,
	// refer, auto); it runs in the background.
	Handoff(ctx context.Context, req transfer.Request) (*transfer.Transfer, error)
	// Hold puts the caller on hold with audio; Resume takes them off.
	Hold(ctx context.Context, audio string) error
	Resume(ctx context.Context) error
}

var _ Call = (*conversation.Routed)(nil)

// FromRegistry reads the routed calls of reg.
func FromRegistry(reg *conversation.Registry) Calls { return registryCalls{reg} }

type registryCalls struct{ reg *conversation.Registry }

func (r registryCalls) Get(id string) (Call, bool) {
	c, ok := r.reg.Get(id)
	if !ok {
		return nil, false
	}
	return c, true
}

// Forwarder sends call control for a call that another node of the fleet
// holds to that node, and reports whether it did (cluster.Service).
type Forwarder interface {
	Forward(w http.ResponseWriter, r *http.Request, callID string) bool
}

// Defaults of Options.
const (
	// DefaultTransferAcceptTimeout bounds how long the refer endpoint
	// waits for the caller's side to accept a REFER: a PBX answers 202 at
	// once, so a longer wait means the REFER is lost.
	DefaultTransferAcceptTimeout = 10 * time.Second
	// DefaultHangupWait bounds how long the hangup endpoint waits for the
	// BYE to go out before it answers (the call ends regardless).
	DefaultHangupWait = 5 * time.Second
)

// Options configure a Service. Calls, Keys, Secrets and Engines are
// required.
type Options struct {
	Calls Calls
	// Records, when set, tells an ended call (409) from an unknown one.
	Records Records
	Keys    Authorizer
	Secrets *auth.ClientSecrets
	// Tokens, when set, is told the tokens each response reports.
	Tokens TokenCounter
	// Engines by name; Engine picks the one direct sessions (API key or
	// client secret, no call_id) use (default: "upstream" when present,
	// else "echo").
	Engines map[string]realtime.Engine
	Engine  string
	// TransferAcceptTimeout bounds how long the refer endpoint waits for
	// the caller's side to accept the REFER (default 10 s).
	TransferAcceptTimeout time.Duration
	// HangupWait bounds how long the hangup endpoint waits for the call
	// to end (default 5 s).
	HangupWait time.Duration
	// PingInterval of the realtime sockets (default 20 s).
	PingInterval time.Duration
	// Remote forwards the requests for calls held by other nodes (nil:
	// one node).
	Remote Forwarder
	// Browsers places browser calls (POST /v1/realtime/calls); nil
	// answers 503. Agents is then required.
	Browsers Browsers
	Agents   Agents
	// Numbers resolves ?phone_number_id= of a browser call (optional:
	// without it the parameter is refused).
	Numbers Numbers
	// Live and Supervisors serve a supervisor's listen and takeover of a
	// live call (nil: 503).
	Live        LiveCalls
	Supervisors Supervisors
	// Addresses says which addresses a stream's bot may have
	// (POST /v1/calls/{call_id}/stream).
	Addresses webhook.AddressPolicy
	Log       zerolog.Logger
}

// Service serves the realtime socket (a controller attached to a call,
// or a direct session), client secrets and live call control.
type Service struct {
	opts   Options
	log    zerolog.Logger
	callWS *realtime.Handler
	direct *realtime.Handler
	once   sync.Once
}

// NewService returns the service.
func NewService(opts Options) (*Service, error) {
	if opts.Calls == nil || opts.Keys == nil || opts.Secrets == nil || len(opts.Engines) == 0 {
		return nil, errors.New("control: calls, keys, secrets and engines are required")
	}
	if opts.Browsers != nil && opts.Agents == nil {
		return nil, errors.New("control: browser calls need the agents")
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
	if opts.TransferAcceptTimeout <= 0 {
		opts.TransferAcceptTimeout = DefaultTransferAcceptTimeout
	}
	if opts.HangupWait <= 0 {
		opts.HangupWait = DefaultHangupWait
	}
	s := &Service{opts: opts, log: opts.Log}
	wlog := opts.Log.With().Str("component", "realtime_ws").Logger()
	s.callWS = realtime.NewHandler(attachEngine{}, realtime.HandlerOptions{
		Config:       func(*http.Request) (realtime.SessionConfig, error) { return realtime.SessionConfig{}, nil },
		Guard:        guardFrom,
		Observe:      observerFrom,
		PingInterval: opts.PingInterval, Logger: &wlog,
	})
	s.direct = realtime.NewHandler(eng, realtime.HandlerOptions{
		Config:       func(r *http.Request) (realtime.SessionConfig, error) { return configFrom(r.Context()), nil },
		Guard:        guardFrom,
		Observe:      observerFrom,
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
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls", Endpoint: auth.EndpointRealtime, Access: httpx.Public, Handler: s.createCall},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/accept", Endpoint: auth.EndpointCalls, Handler: s.accept},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/reject", Endpoint: auth.EndpointCalls, Handler: s.reject},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/refer", Endpoint: auth.EndpointCalls, Handler: s.refer},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/hangup", Endpoint: auth.EndpointCalls, Handler: s.hangup},
		{Method: http.MethodPost, Pattern: "/v1/realtime/calls/{call_id}/dtmf", Endpoint: auth.EndpointCalls, Handler: s.dtmf},
		{Method: http.MethodPost, Pattern: "/v1/calls/{call_id}/listen", Endpoint: auth.EndpointCalls, Handler: s.listen},
		{Method: http.MethodPost, Pattern: "/v1/calls/{call_id}/takeover", Endpoint: auth.EndpointCalls, Handler: s.takeOver},
		{Method: http.MethodPost, Pattern: "/v1/calls/{call_id}/stream", Endpoint: auth.EndpointCalls, Handler: s.sendToStream},
		{Method: http.MethodPost, Pattern: "/v1/calls/{call_id}/transfer", Endpoint: auth.EndpointCalls, Handler: s.transfer},
		{Method: http.MethodPost, Pattern: "/v1/calls/{call_id}/hold", Endpoint: auth.EndpointCalls, Handler: s.hold},
		{Method: http.MethodPost, Pattern: "/v1/calls/{call_id}/resume", Endpoint: auth.EndpointCalls, Handler: s.resume},
	}
}

// Close drops the realtime sockets. It is idempotent.
func (s *Service) Close() error {
	s.once.Do(func() {
		_ = s.callWS.Close()
		_ = s.direct.Close()
	})
	return nil
}
