package records

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/store"
)

// ListResponse is the answer of GET /v1/calls.
type ListResponse struct {
	Calls         []*Record `json:"calls"`
	NextPageToken string    `json:"next_page_token"`
}

// states a listing may be filtered by.
var states = map[string]bool{string(call.StateRinging): true, string(call.StateActive): true, string(call.StateEnded): true}

// queryOf reads the listing's query: page_size (1-100, default 20),
// page_token, phone_number_id, phone_number, state, from, to, since and
// until (RFC 3339, on the invite time: since <= invited_at < until).
func queryOf(v url.Values) (store.CallQuery, error) {
	q := store.CallQuery{
		PhoneNumberID: v.Get("phone_number_id"), PhoneNumber: v.Get("phone_number"), State: v.Get("state"),
		From: v.Get("from"), To: v.Get("to"),
	}
	var err error
	if q.Page, err = httpx.PageOf(v, "page_size", "page_token"); err != nil {
		return q, err
	}
	if q.State != "" && !states[q.State] {
		return q, httpx.BadRequest("state", "state must be ringing, active or ended")
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		s := v.Get(f.name)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, httpx.BadRequest(f.name, "%s must be an RFC 3339 time, e.g. 2024-05-01T12:00:00Z", f.name)
		}
		*f.dst = t
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return q, httpx.BadRequest("until", "until must be after since")
	}
	return q, nil
}

// matches applies a listing's filters to a live call.
func matches(r *Record, q store.CallQuery) bool {
	at := r.InvitedAt.Time()
	return (q.PhoneNumberID == "" || r.PhoneNumberID == q.PhoneNumberID) &&
		(q.PhoneNumber == "" || r.PhoneNumber == q.PhoneNumber) &&
		(q.State == "" || r.State == q.State) &&
		(q.From == "" || r.From == q.From) && (q.To == "" || r.To == q.To) &&
		(q.Since.IsZero() || !at.Before(q.Since)) && (q.Until.IsZero() || at.Before(q.Until))
}

// list answers GET /v1/calls: the caller's team's calls, newest first.
// Every call is stored from its admission, so a page is a page of stored
// records; a record whose call is live here is shown with the call's
// current view (the stored one may lag by a write). The first page (no
// page_token) also starts with the live calls whose record could not be
// stored, newest first. Filtered by a live state (ringing, active), the
// first page starts with every live call in that state and the stored
// rows of live calls are left out: a stored state lags the call's (an
// answered call stored as ringing for a write's time was missing from
// state=active). A call shows once.
func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q, err := queryOf(r.URL.Query())
	if err != nil {
		return err
	}
	team := httpx.TeamOf(ctx)
	stored, next, err := s.st.Calls().List(ctx, team, q)
	if errors.Is(err, store.ErrBadPageToken) {
		return httpx.BadRequest("page_token", "page_token was not issued by this server")
	}
	if err != nil {
		return fmt.Errorf("list calls: %w", err)
	}
	out := ListResponse{Calls: make([]*Record, 0, len(stored)), NextPageToken: next}
	now := s.opts.Now()
	liveState := q.State == string(call.StateRinging) || q.State == string(call.StateActive)
	if q.Page.Token == "" && s.live != nil {
		onPage := make(map[string]bool, len(stored))
		for _, c := range stored {
			if !liveState {
				onPage[c.ID] = true
			}
		}
		live, err := s.unstored(r, team, q, onPage, liveState)
		if err != nil {
			return err
		}
		out.Calls = append(out.Calls, live...)
	}
	for _, c := range stored {
		if s.live != nil {
			if snap, ok := s.live.LiveSnapshot(c.ID); ok {
				if liveState {
					continue // on the first page, from its live view
				}
				if rec := s.fromLive(snap, now); matches(rec, q) {
					out.Calls = append(out.Calls, rec)
				}
				continue
			}
		}
		rec, err := fromStore(c)
		if err != nil {
			return err
		}
		out.Calls = append(out.Calls, rec)
	}
	for _, rec := range out.Calls {
		s.withRecording(rec)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// unstored returns the team's live calls that match q and have no stored
// record (on this page or at all), or all that match q, newest first.
func (s *Service) unstored(r *http.Request, team string, q store.CallQuery, onPage map[string]bool, all bool) ([]*Record, error) {
	now := s.opts.Now()
	tm := newTeams(s.st, s.opts.DefaultTeam)
	var out []*Record
	snaps := s.live.Unstored()
	if all {
		snaps = s.live.All()
	}
	for _, snap := range snaps {
		if onPage[snap.ID] {
			continue
		}
		t := snap.TeamID
		if t == "" {
			var err error
			if t, err = tm.of(r.Context(), snap.NumberID); err != nil {
				return nil, err
			}
		}
		if t != team {
			continue
		}
		if rec := s.fromLive(snap, now); matches(rec, q) {
			out = append(out, rec)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].InvitedAt.Time(), out[j].InvitedAt.Time()
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].CallID > out[j].CallID
	})
	return out, nil
}

// get answers GET /v1/calls/{call_id}: a live call's current view, or the
// stored record. Another team's call is as unknown as a missing one.
func (s *Service) get(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id, team := r.PathValue("call_id"), httpx.TeamOf(ctx)
	if s.live != nil {
		if snap, ok := s.live.LiveSnapshot(id); ok {
			t, err := newTeams(s.st, s.opts.DefaultTeam).of(ctx, snap.NumberID)
			if err != nil {
				return err
			}
			if t == team {
				httpx.WriteJSON(w, http.StatusOK, s.withRecording(s.fromLive(snap, s.opts.Now())))
				return nil
			}
		}
	}
	c, err := s.st.Calls().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.TeamID != team) {
		return httpx.NotFound("no call %s", id)
	}
	if err != nil {
		return fmt.Errorf("get call: %w", err)
	}
	// A call of another node: its live view and its recording are there
	// (when that node is down, the stored record answers).
	if s.opts.Remote != nil && c.NodeID != s.opts.NodeID && s.opts.Remote.ForwardToNode(w, r, c.NodeID) {
		return nil
	}
	rec, err := fromStore(c)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, s.withRecording(rec))
	return nil
}

// fromLive is the record of a call in progress on this node.
func (s *Service) fromLive(snap call.Snapshot, now time.Time) *Record {
	r := fromSnapshot(snap, now)
	r.NodeID = s.opts.NodeID
	return r
}
