package usage

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/auth"
	"switchboard/store"
)

// Endpoint is the ACL endpoint name of the usage route (a management
// route: it needs a management key).
const Endpoint = auth.EndpointUsage

// DefaultMaxPoints is the default bound of the points of an answer.
const DefaultMaxPoints = 10000

// maxBody bounds the request body.
const maxBody = 64 << 10

// Spans reads the call records usage is computed from;
// store.UsageStore implements it.
type Spans interface {
	CallSpans(ctx context.Context, teamID string, from, to time.Time) ([]store.CallSpan, error)
}

var _ Spans = store.UsageStore(nil)

// Options configure a Service.
type Options struct {
	// MaxPoints bounds the points (intervals × series) of an answer;
	// default DefaultMaxPoints.
	MaxPoints int
}

// Service is the usage module of the API.
type Service struct {
	spans Spans
	opts  Options
}

// NewService returns the usage module over the call records of spans.
func NewService(spans Spans, opts Options) *Service {
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = DefaultMaxPoints
	}
	return &Service{spans: spans, opts: opts}
}

// Routes is POST /v1/billing/teams/{team_id}/usage.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodPost, Pattern: "/v1/billing/teams/{team_id}/usage", Endpoint: Endpoint, Access: httpx.Management, Handler: s.usage},
	}
}

// usage answers POST /v1/billing/teams/{team_id}/usage. Another team is as
// unknown as a missing one (404).
func (s *Service) usage(w http.ResponseWriter, r *http.Request) error {
	team := r.PathValue("team_id")
	if p := httpx.PrincipalFrom(r.Context()); p == nil || p.TeamID != team {
		return httpx.NotFound("team %q not found", team)
	}
	var req Request
	if err := httpx.Decode(r, maxBody, &req); err != nil {
		return err
	}
	q, err := Parse(req.AnalyticsRequest, s.opts.MaxPoints)
	if err != nil {
		return err
	}
	spans, err := s.spans.CallSpans(r.Context(), team, q.Buckets.From, q.Buckets.End)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	httpx.WriteJSON(w, http.StatusOK, Compute(q, spans, s.opts.MaxPoints))
	return nil
}
