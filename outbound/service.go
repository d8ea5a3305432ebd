package outbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/numbers"
	"switchboard/sip"
	"switchboard/store"
	"switchboard/stream"
	"switchboard/webhook"
)

// Endpoint is the ACL endpoint of POST /v1/calls: the calls API's.
const Endpoint = "calls"

// Origin is what placing a call from a number needs (resolved by the
// app from the number's record): its route and its outbound trunk, with
// the decrypted password. Never log it.
type Origin struct {
	// Route is the number's route, as an inbound call to it gets it.
	Route call.Route
	// SRTP and Codecs are the number's SIP settings.
	SRTP   string
	Codecs []string
	// TrunkURI is "" when the number has no outbound trunk.
	TrunkURI                   string
	AuthUsername, AuthPassword string
	// CallerID is the From user of the INVITE.
	CallerID string
}

// ErrUnknownNumber is what Numbers answers for a number the team does
// not have.
var ErrUnknownNumber = errors.New("outbound: unknown phone number")

// Numbers reads the number a team places a call from.
type Numbers interface {
	Origin(ctx context.Context, teamID, e164 string) (*Origin, error)
}

// Agents loads agent records (agent.Service).
type Agents interface {
	Load(ctx context.Context, id string) (*agent.Config, error)
}

// Placer places SIP calls (sip.Server).
type Placer interface {
	Place(ctx context.Context, r sip.PlaceRequest) (*sip.Call, error)
}

// Calls runs placed calls (call.Manager).
type Calls interface {
	Place(in *sip.Call, md call.MachineDetection, done func()) *call.Call
}

// Records renders a call's record (records.Of).
type Records func(s call.Snapshot) any

// Slots holds the teams' placed calls in progress and their rate, in the
// store that the nodes of a fleet share (store.OutboundStore), so that
// the limits hold across the fleet.
type Slots interface {
	Reserve(ctx context.Context, slot *store.OutboundSlot, admit store.OutboundAdmit) error
	Release(ctx context.Context, id string) error
}

// Defaults of Options.
const (
	DefaultMaxConcurrent  = 10
	DefaultCallsPerSecond = 2
	DefaultRingTimeout    = 30 * time.Second
	// Bounds of ring_timeout_s.
	MinRingTimeout = 5 * time.Second
	MaxRingTimeout = 120 * time.Second
)

// Options configure a Service; Numbers, Agents, Placer, Calls, Records
// and Slots are required.
type Options struct {
	Numbers Numbers
	Agents  Agents
	Placer  Placer
	Calls   Calls
	Records Records
	Slots   Slots
	// NodeID names this node in the slots it holds (the slots of a node
	// the fleet finds lost stop counting).
	NodeID string
	// MaxConcurrent bounds a team's placed calls in progress across the
	// fleet (0: the default); CallsPerSecond the rate they start at.
	MaxConcurrent  int
	CallsPerSecond int
	// RingTimeout is the default of ring_timeout_s.
	RingTimeout time.Duration
	// Addresses says which hosts a SIP URI callee may name.
	Addresses webhook.AddressPolicy
	Log       zerolog.Logger
	// Now is the clock of the rate limit (default time.Now).
	Now func() time.Time
}

// Service serves POST /v1/calls.
type Service struct {
	opts Options
}

// NewService returns the service.
func NewService(opts Options) (*Service, error) {
	if opts.Numbers == nil || opts.Agents == nil || opts.Placer == nil || opts.Calls == nil || opts.Records == nil || opts.Slots == nil {
		return nil, errors.New("outbound: numbers, agents, placer, calls, records and slots are required")
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.CallsPerSecond <= 0 {
		opts.CallsPerSecond = DefaultCallsPerSecond
	}
	if opts.RingTimeout <= 0 {
		opts.RingTimeout = DefaultRingTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{opts: opts}, nil
}

// Routes are the service's HTTP routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{{Method: http.MethodPost, Pattern: "/v1/calls", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.create}}
}

// request is the body of POST /v1/calls.
type request struct {
	To               *string     `json:"to"`
	From             *string     `json:"from"`
	AgentID          *string     `json:"agent_id"`
	MachineDetection *string     `json:"machine_detection"`
	RingTimeoutS     *int        `json:"ring_timeout_s"`
	Stream           *streamBody `json:"stream"`
	// Headers are added to the INVITE (sip.DecodeHeaders).
	Headers json.RawMessage `json:"headers"`
	// Variables are the call's own ({{variables.NAME}}).
	Variables json.RawMessage `json:"variables"`
}

// streamBody is a placed call's stream: the callee talks with a bot over
// its media stream (the stream object of a number).
type streamBody struct {
	URL             *string           `json:"url"`
	Parameters      map[string]string `json:"parameters"`
	AuthToken       *string           `json:"auth_token"`
	Track           *string           `json:"track"`
	Protocol        *string           `json:"protocol"`
	FallbackAgentID *string           `json:"fallback_agent_id"`
}

// checked is a request that passed validation.
type checked struct {
	to, from    string // callee (E.164 or SIP URI), caller (E.164)
	toURI       bool
	agentID     string
	md          call.MachineDetection
	ringTimeout time.Duration
	headers     []sip.Header
	variables   map[string]string
	stream      *call.StreamTarget
}

func (s *Service) check(b *request) (*checked, error) {
	c := &checked{md: call.MachineDetectionOff, ringTimeout: s.opts.RingTimeout}
	to := strings.TrimSpace(deref(b.To))
	switch {
	case to == "":
		return nil, httpx.BadRequest("to", "to is required: an E.164 number (+14155550123) or a SIP URI (sip:alice@pbx.example.com)")
	case strings.HasPrefix(strings.ToLower(to), "sip:"), strings.HasPrefix(strings.ToLower(to), "sips:"):
		host, err := sip.CheckTargetURI(to)
		if err != nil {
			return nil, httpx.BadRequest("to", "to is not a usable SIP URI (sip:user@host[:port][;transport=udp|tcp|tls], or sips:): %v", err)
		}
		if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			if err := s.opts.Addresses.CheckAddr(a); err != nil {
				return nil, httpx.BadRequest("to", "to must not name a link-local or cloud metadata address (%v)", err)
			}
		}
		c.to, c.toURI = to, true
	default:
		e, ok := numbers.NormalizeE164(to)
		if !ok {
			return nil, httpx.BadRequest("to", "%q is neither an E.164 number (+14155550123) nor a SIP URI", to)
		}
		c.to = e
	}
	from := strings.TrimSpace(deref(b.From))
	if from == "" {
		return nil, httpx.BadRequest("from", "from is required: one of your team's numbers, in E.164")
	}
	e, ok := numbers.NormalizeE164(from)
	if !ok {
		return nil, httpx.BadRequest("from", "%q is not an E.164 number (+14155550123)", from)
	}
	c.from = e
	if b.AgentID != nil {
		if c.agentID = strings.TrimSpace(*b.AgentID); c.agentID == "" {
			return nil, httpx.BadRequest("agent_id", "agent_id is empty: name an agent, or leave it out to use the number's route")
		}
	}
	if b.MachineDetection != nil {
		switch md := call.MachineDetection(strings.TrimSpace(*b.MachineDetection)); md {
		case call.MachineDetectionOff, call.MachineDetectionDetect, call.MachineDetectionHangup:
			c.md = md
		default:
			return nil, httpx.BadRequest("machine_detection", "machine_detection must be off, detect or hangup_on_machine")
		}
	}
	if sb := b.Stream; sb != nil {
		if c.agentID != "" {
			return nil, httpx.BadRequest("stream", "agent_id and stream are mutually exclusive: the callee talks with one of them (a stream names its own fallback_agent_id)")
		}
		t := &call.StreamTarget{URL: strings.TrimSpace(deref(sb.URL)), Parameters: sb.Parameters, AuthToken: deref(sb.AuthToken),
			Track: strings.TrimSpace(deref(sb.Track)), Protocol: strings.TrimSpace(deref(sb.Protocol)),
			FallbackAgentID: strings.TrimSpace(deref(sb.FallbackAgentID))}
		if e := stream.CheckTarget(t, s.opts.Addresses); e != nil {
			return nil, httpx.BadRequest("stream."+e.Field, "%s", e.Message)
		}
		c.stream = t
	}
	if b.RingTimeoutS != nil {
		d := time.Duration(*b.RingTimeoutS) * time.Second
		if d < MinRingTimeout || d > MaxRingTimeout {
			return nil, httpx.BadRequest("ring_timeout_s", "ring_timeout_s must be %d to %d seconds", int(MinRingTimeout/time.Second), int(MaxRingTimeout/time.Second))
		}
		c.ringTimeout = d
	}
	hs, err := sip.DecodeHeaders(b.Headers)
	var he *sip.HeaderError
	if errors.As(err, &he) {
		return nil, httpx.BadRequest(he.Param("headers"), "%s", he.Error())
	}
	if err != nil {
		return nil, err
	}
	c.headers = hs
	vars, err := agent.ParseVariables(b.Variables)
	var ve *agent.VariableError
	if errors.As(err, &ve) {
		return nil, httpx.BadRequest(ve.Param(), "%s", ve.Error())
	}
	if err != nil {
		return nil, err
	}
	c.variables = vars
	return c, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// create is POST /v1/calls: 201 with the call's record (state ringing,
// progress dialing) and Location; the call goes on in the background.
func (s *Service) create(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var b request
	if err := httpx.Decode(r, 0, &b); err != nil {
		return err
	}
	req, err := s.check(&b)
	if err != nil {
		return err
	}
	team := httpx.TeamOf(ctx)
	o, err := s.opts.Numbers.Origin(ctx, team, req.from)
	if errors.Is(err, ErrUnknownNumber) {
		return &httpx.Error{Status: http.StatusNotFound, Code: "not_found", Param: "from", Message: fmt.Sprintf("your team has no number %s", req.from)}
	}
	if err != nil {
		return fmt.Errorf("place call: %w", err)
	}
	route := o.Route
	if req.agentID != "" {
		a, err := s.opts.Agents.Load(ctx, req.agentID)
		if errors.Is(err, agent.ErrUnknownAgent) || (err == nil && a.TeamID != team) {
			return &httpx.Error{Status: http.StatusNotFound, Code: "not_found", Param: "agent_id", Message: fmt.Sprintf("no agent %s", req.agentID)}
		}
		if err != nil {
			return fmt.Errorf("place call: %w", err)
		}
		if err := httpx.RequireModel(ctx, a.Settings.Model); err != nil {
			return err
		}
		route.AgentID, route.WebhookID, route.Webhook, route.Stream = a.ID, "", nil, nil
	}
	route.Variables = req.variables
	if req.stream != nil {
		if err := s.checkFallback(ctx, team, req.stream.FallbackAgentID); err != nil {
			return err
		}
		// The upgrade is signed with the number's secret: its stream's,
		// else its webhook's.
		switch {
		case route.Stream != nil:
			req.stream.SigningSecret = route.Stream.SigningSecret
		case route.Webhook != nil:
			req.stream.SigningSecret = route.Webhook.SigningSecret
		}
		route.AgentID, route.WebhookID, route.Webhook, route.Stream = "", "", nil, req.stream
	}
	if route.AgentID == "" && route.WebhookID == "" && route.Stream == nil {
		return httpx.Conflict("agent_id", "number %s routes to neither an agent, a webhook nor a stream: name agent_id or stream", req.from)
	}
	target := req.to
	if !req.toURI {
		if o.TrunkURI == "" {
			return &httpx.Error{Status: http.StatusConflict, Code: "no_outbound_trunk", Param: "from",
				Message: fmt.Sprintf("number %s has no outbound_trunk: set one with PATCH /v2/phone-numbers/{id}, or call a SIP URI", req.from)}
		}
		if target, err = sip.TrunkTarget(o.TrunkURI, req.to); err != nil {
			return fmt.Errorf("place call: trunk of %s: %w", req.from, err)
		}
	}
	release, err := s.reserve(ctx, team)
	if err != nil {
		return err
	}
	pr := sip.PlaceRequest{Target: target, From: o.CallerID, RingTimeout: req.ringTimeout, Codecs: o.Codecs, Headers: req.headers,
		Route: &sip.Route{NumberID: route.NumberID, PhoneNumber: route.PhoneNumber, SRTP: sip.SRTPPolicy(o.SRTP), Call: &route}}
	if !req.toURI {
		pr.AuthUsername, pr.AuthPassword = o.AuthUsername, o.AuthPassword
	}
	in, err := s.opts.Placer.Place(ctx, pr)
	if err != nil {
		release()
		switch {
		case errors.Is(err, sip.ErrOverloaded):
			return httpx.Unavailable("the appliance is at its maximum number of calls", 5*time.Second)
		case errors.Is(err, sip.ErrShutdown):
			return httpx.Unavailable("the appliance is shutting down", 5*time.Second)
		case errors.Is(err, sip.ErrTLSUnavailable), errors.Is(err, sip.ErrSRTPUnavailable):
			// The trunk or the target asks for what this appliance's
			// settings cannot give: say which setting.
			param := "from"
			if req.toURI {
				param = "to"
			}
			return &httpx.Error{Status: http.StatusConflict, Code: "transport_unavailable", Param: param,
				Message: fmt.Sprintf("the call to %s cannot be placed: %v", req.to, err)}
		}
		return httpx.BadRequest("to", "the call cannot be placed to %s: %v", req.to, err)
	}
	c := s.opts.Calls.Place(in, req.md, release)
	log := c.Logger()
	log.Info().Str("to", req.to).Str("from", req.from).Str("route", route.String()).Str("machine_detection", string(req.md)).
		Dur("ring_timeout", req.ringTimeout).Msg("outbound call placed")
	w.Header().Set("Location", "/v1/calls/"+c.ID())
	httpx.WriteJSON(w, http.StatusCreated, s.opts.Records(c.Snapshot()))
	return nil
}

// releaseTimeout bounds the store write that frees a slot when its call
// ends (the call is over; the write must not hang its teardown).
const releaseTimeout = 5 * time.Second

// reserve holds one of the team's placed calls, in the store the fleet
// shares: 429 with Retry-After past its calls per second or its calls at
// once, counted over every node. release gives it back.
func (s *Service) reserve(ctx context.Context, team string) (release func(), err error) {
	now := s.opts.Now()
	slot := &store.OutboundSlot{ID: httpx.NewID("slot"), TeamID: team, NodeID: s.opts.NodeID, StartTime: now}
	err = s.opts.Slots.Reserve(ctx, slot, func(tat time.Time, active int) (time.Time, error) {
		next, wait := auth.GCRA(tat, s.opts.CallsPerSecond, time.Second, now)
		if wait > 0 {
			return time.Time{}, &httpx.Error{Status: http.StatusTooManyRequests, Code: "rate_limited", RetryAfter: wholeSeconds(wait),
				Message: fmt.Sprintf("your team places at most %d calls a second (outbound.calls_per_second)", s.opts.CallsPerSecond)}
		}
		if active >= s.opts.MaxConcurrent {
			return time.Time{}, &httpx.Error{Status: http.StatusTooManyRequests, Code: "too_many_calls", RetryAfter: 5 * time.Second,
				Message: fmt.Sprintf("your team has %d placed calls in progress, its limit (outbound.max_concurrent)", active)}
		}
		return next, nil
	})
	if err != nil {
		var he *httpx.Error
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, fmt.Errorf("reserve an outbound slot: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			if err := s.opts.Slots.Release(ctx, slot.ID); err != nil {
				s.opts.Log.Warn().Err(err).Str("team_id", team).Msg("outbound slot not released; it counts until this node restarts or is found lost")
			}
		})
	}, nil
}

// wholeSeconds rounds a wait up to whole seconds, at least one, for a
// Retry-After header.
func wholeSeconds(d time.Duration) time.Duration {
	return max((d+time.Second-1)/time.Second, 1) * time.Second
}

// checkFallback requires a placed call's stream's fallback agent (when it
// names one) to be one of the team's.
func (s *Service) checkFallback(ctx context.Context, team, id string) error {
	if id == "" {
		return nil
	}
	a, err := s.opts.Agents.Load(ctx, id)
	if errors.Is(err, agent.ErrUnknownAgent) || (err == nil && a.TeamID != team) {
		return &httpx.Error{Status: http.StatusNotFound, Code: "not_found", Param: "stream.fallback_agent_id", Message: fmt.Sprintf("no agent %s", id)}
	}
	if err != nil {
		return fmt.Errorf("place call: %w", err)
	}
	return httpx.RequireModel(ctx, a.Settings.Model)
}
