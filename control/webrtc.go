package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/realtime"
	"switchboard/rtc"
)

// Browsers places browser calls (rtc.Server).
type Browsers interface {
	Call(ctx context.Context, offer string, route call.Route, info call.LegInfo, opts rtc.CallOptions, log zerolog.Logger) (rtc.Answer, error)
}

// Agents loads agent records, to check an agent_id belongs to the
// caller's team (agent.Service).
type Agents interface {
	Load(ctx context.Context, id string) (*agent.Config, error)
}

// Numbers resolves a team's phone number into the route a call to it
// takes (the app's number lookup).
type Numbers interface {
	NumberRoute(ctx context.Context, teamID, id string) (call.Route, error)
}

// ErrUnknownNumber means a number id is not one of the team's.
var ErrUnknownNumber = errors.New("control: unknown phone number")

// maxOfferBytes bounds the SDP offer's body.
const maxOfferBytes = 64 << 10

// createCall is POST /v1/realtime/calls: a browser's SDP offer becomes a
// call (channel webrtc) to an agent (?agent_id=) or a direct session (the
// client secret's stored session, or ?model=), answered 201 with the SDP
// answer and the call's Location, as the hosted realtime APIs do. It
// authenticates in the handler: a bearer API key (the realtime endpoint)
// or client secret.
func (s *Service) createCall(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Browsers == nil {
		return httpx.Unavailable("browser calls are not enabled on this appliance", 0)
	}
	token, _ := credential(r)
	if token == "" {
		return httpx.Unauthorized("send an API key or a client secret as a bearer token")
	}
	q := r.URL.Query()
	agentID, model, numberID := q.Get("agent_id"), q.Get("model"), q.Get("phone_number_id")
	if n := btoi(agentID != "") + btoi(model != "") + btoi(numberID != ""); n > 1 {
		return httpx.BadRequest("agent_id", "agent_id, phone_number_id and model are mutually exclusive: a call goes to one agent, one number or one session")
	}
	route := call.Route{}
	info := call.LegInfo{Received: time.Now(), To: "session"}
	var (
		cfg   realtime.SessionConfig
		pol   policy
		keyID string
	)
	if auth.KindOf(token) == auth.TokenClientSecret {
		cs, err := s.opts.Secrets.Check(r.Context(), token)
		if err != nil {
			return err
		}
		if len(cs.Session) > 0 {
			if err := json.Unmarshal(cs.Session, &cfg); err != nil {
				return fmt.Errorf("client secret session: %w", err)
			}
		}
		route.TeamID, info.From = cs.TeamID, "client_secret:"+cs.ID
		pol, keyID = policy{allows: cs.AllowsModel, bound: cfg.Model}, cs.KeyID
	} else {
		p, err := s.opts.Keys.Authorize(r.Context(), token, realtimeRoute)
		if err != nil {
			return err
		}
		route.TeamID, info.From = p.TeamID, "api_key:"+p.KeyID
		pol, keyID = policy{allows: p.AllowsModel}, p.KeyID
	}
	opts := rtc.CallOptions{Observe: s.counter(keyID)}
	switch {
	case numberID != "":
		// The number's own route, as a phone call to it would take: its
		// agent, or its webhook (whose controller steers the call; the
		// browser then has no event channel).
		if s.opts.Numbers == nil {
			return httpx.BadRequest("phone_number_id", "calls to numbers are not enabled")
		}
		nr, err := s.opts.Numbers.NumberRoute(r.Context(), route.TeamID, numberID)
		if errors.Is(err, ErrUnknownNumber) {
			return httpx.NotFound("no phone number %s", numberID)
		}
		if err != nil {
			return err
		}
		route, info.To = nr, nr.PhoneNumber
		opts.Guard = pol.guard("")
	case agentID != "":
		a, err := s.opts.Agents.Load(r.Context(), agentID)
		if errors.Is(err, agent.ErrUnknownAgent) || (err == nil && a.TeamID != route.TeamID) {
			return httpx.NotFound("no agent %s", agentID)
		}
		if err != nil {
			return err
		}
		route.AgentID, info.To = a.ID, "agent:"+a.ID
		// The agent's model is the call's own; a model the page names in a
		// session.update must pass the credential's policy.
		opts.Guard = pol.guard("")
	default:
		// A direct session: the same rules as GET /v1/realtime.
		if model != "" {
			if cfg.Model != "" && model != cfg.Model {
				return &httpx.Error{Status: http.StatusForbidden, Code: "permission_denied", Param: "model",
					Message: "this client secret is bound to model " + cfg.Model + " (the model of its stored session)"}
			}
			cfg.Model = model
		}
		if cfg.Model == "" {
			cfg.Model = realtime.DefaultModel
		}
		if err := checkSession(&cfg); err != nil {
			return configErr(err)
		}
		if he := pol.check("model", cfg.Model, cfg.Reasoning); he != nil {
			return he
		}
		effective(&cfg)
		session, err := json.Marshal(&cfg)
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		route.Session = session
		opts.Guard = pol.guard(cfg.Model)
	}
	offer, err := readOffer(r)
	if err != nil {
		return err
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		info.Headers = append(info.Headers, call.Header{Name: "User-Agent", Value: ua})
	}
	if o := r.Header.Get("Origin"); o != "" {
		info.Headers = append(info.Headers, call.Header{Name: "Origin", Value: o})
	}
	info.RemoteID = r.RemoteAddr
	ans, err := s.opts.Browsers.Call(r.Context(), offer, route, info, opts, s.log)
	if err != nil {
		return browserError(err)
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", "/v1/realtime/calls/"+ans.CallID)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, ans.SDP)
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// browserError turns a refused browser call into the API's error: a bad
// offer is the caller's fault; a call the appliance refused carries a SIP
// status, mapped to its HTTP sense.
func browserError(err error) error {
	var re *call.RejectError
	switch {
	case errors.Is(err, rtc.ErrBadOffer):
		return httpx.BadRequest("sdp", "%v", err)
	case errors.Is(err, rtc.ErrClosed):
		return httpx.Unavailable("the appliance is shutting down", 5*time.Second)
	case errors.As(err, &re):
		msg := re.Error()
		switch {
		case re.Status == http.StatusNotFound:
			return httpx.NotFound("%s", msg)
		case re.Status == http.StatusForbidden:
			return httpx.Forbidden(msg)
		case re.Status >= 400 && re.Status < 500 && re.Status != 480 && re.Status != 487:
			return httpx.BadRequest("", "%s", msg)
		case re.Status == http.StatusGatewayTimeout:
			return &httpx.Error{Status: http.StatusGatewayTimeout, Code: "timeout", Message: msg}
		}
		retry := re.RetryAfter
		if retry == 0 {
			retry = time.Second
		}
		return httpx.Unavailable("the call could not be set up: "+msg, retry)
	}
	return err
}
