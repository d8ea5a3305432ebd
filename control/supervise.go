package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/rs/zerolog"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/rtc"
)

// LiveCalls finds the calls in progress on this node (call.Manager).
type LiveCalls interface {
	Get(id string) (*call.Call, bool)
}

// Supervisors brings a supervisor's browser into a live call
// (rtc.Server).
type Supervisors interface {
	Supervise(ctx context.Context, c rtc.Supervised, offer string, s call.Supervision, log zerolog.Logger) (rtc.Answer, error)
}

var _ Supervisors = (*rtc.Server)(nil)

// listen is POST /v1/calls/{call_id}/listen: the body is a browser's SDP
// offer; the browser hears the caller's line (the caller and whoever the
// caller hears, mixed) and nobody hears it. 201 with the SDP answer.
func (s *Service) listen(w http.ResponseWriter, r *http.Request) error {
	return s.supervise(w, r, false)
}

// takeOver is POST /v1/calls/{call_id}/takeover: as listen, but the
// browser's user replaces the conversation: the caller and the browser
// hear each other, the model session ends, the call goes on until either
// hangs up. 409 when the call was taken over already.
func (s *Service) takeOver(w http.ResponseWriter, r *http.Request) error {
	return s.supervise(w, r, true)
}

func (s *Service) supervise(w http.ResponseWriter, r *http.Request, takeOver bool) error {
	id := r.PathValue("call_id")
	if s.opts.Live == nil || s.opts.Supervisors == nil {
		return httpx.Unavailable("supervising calls from a browser is not enabled on this appliance", 0)
	}
	if _, ok := s.opts.Live.Get(id); !ok && s.opts.Remote != nil && s.opts.Remote.Forward(w, r, id) {
		return nil
	}
	c, err := s.supervisedCall(r, id)
	if err != nil {
		return err
	}
	if takeOver && c.ConversationEnded() != "" {
		return httpx.Conflict("call_id", "call %s was taken over already", id)
	}
	offer, err := readOffer(r)
	if err != nil {
		return err
	}
	p := httpx.PrincipalFrom(r.Context())
	sup := call.Supervision{TakeOver: takeOver, KeyID: p.KeyID, KeyName: p.KeyName}
	ans, err := s.opts.Supervisors.Supervise(r.Context(), c, offer, sup, s.log)
	switch {
	case errors.Is(err, call.ErrTakingOver):
		return httpx.Conflict("call_id", "another supervisor is taking call %s over", id)
	case errors.Is(err, call.ErrConversationEnded):
		return httpx.Conflict("call_id", "call %s was taken over already", id)
	case errors.Is(err, call.ErrNotActive):
		return httpx.Conflict("call_id", "call %s has ended", id)
	case err != nil:
		return browserError(err)
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", "/v1/calls/"+id)
	w.Header().Set(PartyHeader, ans.CallID)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, ans.SDP)
	return nil
}

// PartyHeader names, in the answer of listen and takeover, the
// supervisor's party: the party_id of the call record's supervisor
// events.
const PartyHeader = "X-Switchboard-Party-Id"

// supervisedCall finds the live call a supervisor joins: 404 when unknown
// or of another team, 409 when not answered yet or already over.
func (s *Service) supervisedCall(r *http.Request, id string) (*call.Call, error) {
	p := httpx.PrincipalFrom(r.Context())
	if p == nil {
		return nil, httpx.NotFound("no call %s", id)
	}
	c, ok := s.opts.Live.Get(id)
	if !ok && s.opts.Records != nil {
		if rec, err := s.opts.Records.Get(r.Context(), id); err == nil && rec.TeamID == p.TeamID && !rec.EndTime.IsZero() {
			return nil, httpx.Conflict("call_id", "call %s has ended", id)
		}
	}
	if !ok || c.Route().TeamID != p.TeamID {
		return nil, httpx.NotFound("no call %s", id)
	}
	switch st := c.Snapshot().State; st {
	case call.StateActive:
		return c, nil
	case call.StateRinging:
		return nil, httpx.Conflict("call_id", "call %s is not answered yet", id)
	default:
		return nil, httpx.Conflict("call_id", "call %s has ended", id)
	}
}

// readOffer reads a request's SDP offer (Content-Type application/sdp).
func readOffer(r *http.Request) (string, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/sdp" {
		return "", &httpx.Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
			Message: "the body must be an SDP offer with Content-Type: application/sdp"}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxOfferBytes+1))
	if err != nil {
		return "", httpx.BadRequest("", "read the offer: %v", err)
	}
	if len(body) > maxOfferBytes {
		return "", &httpx.Error{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: fmt.Sprintf("the SDP offer is larger than %d bytes", maxOfferBytes)}
	}
	if len(body) == 0 {
		return "", httpx.BadRequest("sdp", "the body must be an SDP offer")
	}
	return string(body), nil
}
