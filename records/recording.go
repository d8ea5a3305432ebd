package records

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// RecordingFile is an opened recording: a WAV file.
type RecordingFile interface {
	io.ReadSeeker
	io.Closer
}

// Recordings are the calls' recordings (package recording).
type Recordings interface {
	// OpenFile opens the recording of a call: ErrNoRecording when it has
	// none.
	OpenFile(id string) (RecordingFile, time.Time, error)
	// Remove deletes it: ErrNoRecording when there is none,
	// ErrRecordingInProgress while it is written.
	Remove(id string) error
	// Has reports whether the call has a recording.
	Has(id string) bool
}

// RecordingRef points a record at its recording.
type RecordingRef struct {
	URL string `json:"url"`
}

// withRecording sets rec.Recording when the call has a recording.
func (s *Service) withRecording(rec *Record) *Record {
	if s.opts.Recordings != nil && s.opts.Recordings.Has(rec.CallID) {
		rec.Recording = &RecordingRef{URL: "/v1/calls/" + rec.CallID + "/recording"}
	}
	return rec
}

// Errors a Recordings returns.
var (
	ErrNoRecording         = errors.New("no recording")
	ErrRecordingInProgress = errors.New("recording in progress")
)

// teamOfCall returns the team of call id, live or stored (store.ErrNotFound
// when there is no such call).
func (s *Service) teamOfCall(ctx context.Context, id string) (string, error) {
	if s.live != nil {
		if snap, ok := s.live.LiveSnapshot(id); ok {
			return newTeams(s.st, s.opts.DefaultTeam).of(ctx, snap.NumberID)
		}
	}
	c, err := s.st.Calls().Get(ctx, id)
	if err != nil {
		return "", err
	}
	return c.TeamID, nil
}

// ownCall checks that call id exists and belongs to the caller's team
// (another team's call is as unknown as a missing one).
func (s *Service) ownCall(r *http.Request, id string) error {
	team, err := s.teamOfCall(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && team != httpx.TeamOf(r.Context())) {
		return httpx.NotFound("no call %s", id)
	}
	if err != nil {
		return fmt.Errorf("find call: %w", err)
	}
	return nil
}

// forwarded sends a recording request for a call of another node of a
// fleet to that node, whose disk holds the recording (being written, or
// written). When that node is not running this node answers: a
// recording.dir that the nodes share holds the finished recording too.
func (s *Service) forwarded(w http.ResponseWriter, r *http.Request, id string) bool {
	if s.opts.Remote == nil {
		return false
	}
	c, err := s.st.Calls().Get(r.Context(), id)
	return err == nil && c.NodeID != s.opts.NodeID && s.opts.Remote.ForwardToNode(w, r, c.NodeID)
}

// getRecording answers GET /v1/calls/{call_id}/recording: the stereo WAV
// (caller left, agent right), with Range requests; a recording in
// progress is served as far as it is written.
func (s *Service) getRecording(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("call_id")
	if err := s.ownCall(r, id); err != nil {
		return err
	}
	if s.forwarded(w, r, id) {
		return nil
	}
	f, mod, err := s.opts.Recordings.OpenFile(id)
	if errors.Is(err, ErrNoRecording) {
		return httpx.NotFound("call %s has no recording", id)
	}
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.wav"`)
	http.ServeContent(w, r, "", mod, f)
	return nil
}

// deleteRecording answers DELETE /v1/calls/{call_id}/recording: 204, or
// 409 while the call is still recorded.
func (s *Service) deleteRecording(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("call_id")
	if err := s.ownCall(r, id); err != nil {
		return err
	}
	if s.forwarded(w, r, id) {
		return nil
	}
	err := s.opts.Recordings.Remove(id)
	switch {
	case errors.Is(err, ErrNoRecording):
		return httpx.NotFound("call %s has no recording", id)
	case errors.Is(err, ErrRecordingInProgress):
		return httpx.Conflict("call_id", "call %s is still being recorded", id)
	case err != nil:
		return fmt.Errorf("delete recording: %w", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
