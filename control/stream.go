package control

import (
	"errors"
	"net/http"
	"strings"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/conversation"
	"switchboard/stream"
)

// streamRequest is the body of POST /v1/calls/{call_id}/stream: the same
// stream object a number routes to.
type streamRequest struct {
	URL        *string           `json:"url"`
	Parameters map[string]string `json:"parameters"`
	AuthToken  *string           `json:"auth_token"`
	Track      *string           `json:"track"`
	Protocol   *string           `json:"protocol"`
}

// streamResponse answers POST /v1/calls/{call_id}/stream.
type streamResponse struct {
	CallID    string `json:"call_id"`
	StreamSID string `json:"stream_sid"`
}

// sendToStream is POST /v1/calls/{call_id}/stream: a webhook controller
// sends its call, ringing or answered, to a bot's stream (Twilio Media
// Streams or AudioSocket). The appliance dials the bot at once; 200 with
// the stream's sid once it is open (a ringing call is then answered, an
// answered one leaves its model session), 502 when the bot cannot be
// reached (the call stays as it was). Only a webhook-routed call can be
// sent (409 otherwise); the upgrade is signed with its number's webhook
// secret.
func (s *Service) sendToStream(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var req streamRequest
	if err := httpx.Decode(r, 0, &req); err != nil {
		return err
	}
	t := call.StreamTarget{URL: strings.TrimSpace(deref(req.URL)), Parameters: req.Parameters, AuthToken: deref(req.AuthToken),
		Track: strings.TrimSpace(deref(req.Track)), Protocol: strings.TrimSpace(deref(req.Protocol))}
	if e := stream.CheckTarget(&t, s.opts.Addresses); e != nil {
		return httpx.BadRequest(e.Field, "%s", e.Message)
	}
	rc, err := s.findCall(r, anyRinging)
	if err != nil {
		return err
	}
	id := rc.Phone().ID()
	sid, err := rc.SendToStream(r.Context(), t)
	var re *call.RejectError
	switch {
	case err == nil:
	case errors.Is(err, conversation.ErrNotControlled):
		return httpx.Conflict("call_id", "call %s is not routed to a webhook: only a controller's call can be sent to a stream", id)
	case errors.Is(err, conversation.ErrCallOver):
		return httpx.Conflict("call_id", "call %s has ended", id)
	case errors.Is(err, conversation.ErrStreamed):
		return httpx.Conflict("call_id", "call %s already went to a stream", id)
	case errors.Is(err, stream.ErrUnreachable):
		return &httpx.Error{Status: http.StatusBadGateway, Code: "stream_unreachable", Param: "url", Message: err.Error() + "; the call stays as it was"}
	case errors.As(err, &re):
		return httpx.Unavailable(re.Error(), 0)
	default:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, streamResponse{CallID: id, StreamSID: sid})
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
