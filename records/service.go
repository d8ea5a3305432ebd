package records

import (
	"context"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Endpoint is the ACL endpoint name of the call routes.
const Endpoint = "calls"

// Options configure a Service.
type Options struct {
	// DefaultTeam owns calls whose number is unknown; default "default".
	DefaultTeam string
	// Now is the clock (durations of live calls); default time.Now.
	Now func() time.Time
	// NodeID names this node in the records of its live calls.
	NodeID string
	// Remote is the rest of the fleet (nil: one node): GET /v1/calls/{id}
	// and the recording of a call of another node are forwarded there,
	// and the live stream carries the calls in progress on every node.
	Remote Fleet
	// Recordings, when set, serve GET and DELETE
	// /v1/calls/{call_id}/recording.
	Recordings Recordings
	// InProgress, when set, serves the live stream GET /v1/calls/live.
	InProgress InProgress
}

// Fleet is the rest of the fleet this node belongs to (cluster.Service).
type Fleet interface {
	// ForwardToNode sends a request to node, and reports whether it did:
	// the live view of its call, the recording on its disk.
	ForwardToNode(w http.ResponseWriter, r *http.Request, node string) bool
	// AskAll sends a signed GET of path to every other running node and
	// returns the answers by node id (nil: no answer).
	AskAll(ctx context.Context, path string) (map[string][]byte, error)
	// Verify checks that r was signed by a node of the fleet.
	Verify(r *http.Request) (node string, err error)
}

// Service is the calls module of the API.
type Service struct {
	st   store.Store
	live LiveCalls
	opts Options
	stopper
}

// NewService returns the calls module over the stored records in st and
// the calls in progress in live (nil: none).
func NewService(st store.Store, live LiveCalls, opts Options) *Service {
	if opts.DefaultTeam == "" {
		opts.DefaultTeam = DefaultTeam
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{st: st, live: live, opts: opts, stopper: stopper{stop: make(chan struct{})}}
}

// Routes are the /v1/calls routes.
func (s *Service) Routes() []httpx.Route {
	rts := []httpx.Route{
		{Method: http.MethodGet, Pattern: "/v1/calls", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.list},
		{Method: http.MethodGet, Pattern: "/v1/calls/live", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.stream},
		{Method: http.MethodGet, Pattern: "/v1/calls/{call_id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.get},
		{Method: http.MethodGet, Pattern: "/v1/calls/{call_id}/recording", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.recordingRoute(s.getRecording)},
		{Method: http.MethodDelete, Pattern: "/v1/calls/{call_id}/recording", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.recordingRoute(s.deleteRecording)},
	}
	if s.opts.Remote != nil {
		// For the other nodes of the fleet only (signed).
		rts = append(rts, httpx.Route{Method: http.MethodGet, Pattern: fleetLivePath, Access: httpx.Public, Handler: s.fleetLive})
	}
	return rts
}

// recordingRoute answers 404 for the recording routes of an appliance
// that records nothing.
func (s *Service) recordingRoute(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Recordings == nil {
			return httpx.NotFound("recordings are not enabled")
		}
		return h(w, r)
	}
}
