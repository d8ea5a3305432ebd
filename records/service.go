package records

import (
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
	// Remote forwards GET /v1/calls/{id} and its recording, for a call of
	// another node of the fleet, to that node (nil: one node).
	Remote Forwarder
	// Recordings, when set, serve GET and DELETE
	// /v1/calls/{call_id}/recording.
	Recordings Recordings
	// InProgress, when set, serves the live stream GET /v1/calls/live.
	InProgress InProgress
}

// Forwarder sends a request about a call held by another node to that
// node, and reports whether it did (cluster.Service).
type Forwarder interface {
	// ForwardToNode sends a request to node: the live view of its call,
	// the recording on its disk.
	ForwardToNode(w http.ResponseWriter, r *http.Request, node string) bool
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
	return []httpx.Route{
		{Method: http.MethodGet, Pattern: "/v1/calls", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.list},
		{Method: http.MethodGet, Pattern: "/v1/calls/live", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.stream},
		{Method: http.MethodGet, Pattern: "/v1/calls/{call_id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.get},
		{Method: http.MethodGet, Pattern: "/v1/calls/{call_id}/recording", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.recordingRoute(s.getRecording)},
		{Method: http.MethodDelete, Pattern: "/v1/calls/{call_id}/recording", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.recordingRoute(s.deleteRecording)},
	}
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
