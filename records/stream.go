package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"switchboard/api/httpx"
	"switchboard/call"
)

// InProgress lists the calls in progress on this node (call.Manager).
type InProgress interface {
	List() []*call.Call
}

// Defaults of the live stream.
const (
	// streamTick is how often the stream looks at the live calls; an
	// event goes out only when something changed (a state, a transcript
	// line, the media figures of a call that is talking).
	streamTick = time.Second
	// streamPing keeps idle proxies from closing a quiet stream.
	streamPing = 15 * time.Second
	// streamMax bounds the calls one event carries (newest first).
	streamMax = 100
)

// liveEvent is the data of a "calls" event of the live stream.
type liveEvent struct {
	Calls []*Record `json:"calls"`
}

// stream is GET /v1/calls/live: a Server-Sent Events stream of the team's
// calls in progress on this node, with their transcripts and media
// figures, pushed whenever they change (at most once a second): the web
// console's live view, and anyone's. Browsers read it with fetch (an
// EventSource cannot send the bearer token).
func (s *Service) stream(w http.ResponseWriter, r *http.Request) error {
	if s.opts.InProgress == nil {
		return httpx.NotFound("no live calls on this node")
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	team := httpx.TeamOf(r.Context())
	tick := time.NewTicker(streamTick)
	defer tick.Stop()
	lastWrite := time.Now()
	var last []byte
	for {
		b, err := json.Marshal(liveEvent{Calls: s.fleetLiveOf(r, team)})
		if err != nil {
			return fmt.Errorf("live calls: %w", err)
		}
		switch {
		case !bytes.Equal(b, last):
			if _, err := fmt.Fprintf(w, "event: calls\ndata: %s\n\n", b); err != nil {
				return nil
			}
			last, lastWrite = b, time.Now()
		case time.Since(lastWrite) >= streamPing:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
			lastWrite = time.Now()
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		select {
		case <-r.Context().Done():
			return nil
		case <-s.stop:
			return nil
		case <-tick.C:
		}
	}
}

// liveOf is the team's calls in progress, newest first.
func (s *Service) liveOf(r *http.Request, team string) []*Record {
	now := s.opts.Now()
	tm := newTeams(s.st, s.opts.DefaultTeam)
	out := []*Record{}
	for _, c := range s.opts.InProgress.List() {
		snap := c.Snapshot()
		t := snap.TeamID
		if t == "" {
			var err error
			if t, err = tm.of(r.Context(), snap.NumberID); err != nil {
				continue
			}
		}
		if t == team {
			out = append(out, s.fromLive(snap, now))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].InvitedAt.Time().After(out[j].InvitedAt.Time()) })
	if len(out) > streamMax {
		out = out[:streamMax]
	}
	return out
}

// Close ends the live streams (the HTTP server is shutting down); it is
// idempotent.
func (s *Service) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	return nil
}

// stopper is embedded by Service: the live streams' stop signal.
type stopper struct {
	stop     chan struct{}
	stopOnce sync.Once
}

// fleetLivePath is where a node of a fleet serves its calls in progress to
// the others (signed with the cluster secret).
const fleetLivePath = "/cluster/v1/calls/live"

// fleetLive is GET /cluster/v1/calls/live?team=: this node's calls in
// progress of the team, for another node's live stream.
func (s *Service) fleetLive(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.opts.Remote.Verify(r); err != nil {
		return httpx.Unauthorized("this route is for the nodes of the fleet: " + err.Error())
	}
	calls := []*Record{}
	if s.opts.InProgress != nil {
		calls = s.liveOf(r, r.URL.Query().Get("team"))
	}
	httpx.WriteJSON(w, http.StatusOK, liveEvent{Calls: calls})
	return nil
}

// fleetLiveOf is the team's calls in progress on this node and, in a
// fleet, on every other node that answers within a second, newest first.
func (s *Service) fleetLiveOf(r *http.Request, team string) []*Record {
	out := s.liveOf(r, team)
	if s.opts.Remote == nil {
		return out
	}
	answers, err := s.opts.Remote.AskAll(r.Context(), fleetLivePath+"?team="+url.QueryEscape(team))
	if err != nil {
		return out
	}
	for _, body := range answers {
		var ev liveEvent
		if body != nil && json.Unmarshal(body, &ev) == nil {
			out = append(out, ev.Calls...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].InvitedAt.Time().After(out[j].InvitedAt.Time()) })
	if len(out) > streamMax {
		out = out[:streamMax]
	}
	return out
}
