package control

import (
	"errors"
	"net/http"
	"strings"

	"switchboard/api/httpx"
	"switchboard/conversation"
	"switchboard/realtime"
)

// The hosted API's answers to realtime.call.incoming: accept (with the
// session configuration the call's model session opens with) and reject
// (with a SIP status). The official SDKs' client.realtime.calls.accept and
// .reject send them. Either answers the ringing call of a webhook-routed
// number; a controller attaching with call_id does too, and may still
// attach to an accepted call (the sideband of the hosted flow).

// DefaultRejectStatus is the SIP status of a reject that names none (603
// Decline), as the hosted API does.
const DefaultRejectStatus = 603

// ringingCall finds the webhook-routed call of an accept or reject: 404
// unknown (or another team's, or not webhook-routed), 409 when it no
// longer rings (answered, rejected or ended; also once it left the live
// registry and its record says it ended).
func (s *Service) ringingCall(r *http.Request) (Call, error) {
	id := r.PathValue("call_id")
	p := httpx.PrincipalFrom(r.Context())
	if p == nil {
		return nil, httpx.NotFound("no call %s", id)
	}
	rc, ok := s.opts.Calls.Get(id)
	if !ok && s.opts.Records != nil {
		// Not live here, not on another node (forwarded), but recorded:
		// it has ended, or is ending (a rejected call leaves the live
		// registry before its record is closed).
		if c, err := s.opts.Records.Get(r.Context(), id); err == nil && c.TeamID == p.TeamID {
			return nil, httpx.Conflict("call_id", "call %s has ended", id)
		}
	}
	if !ok || rc.TeamID() != p.TeamID {
		return nil, httpx.NotFound("no webhook-routed call %s is ringing", id)
	}
	return rc, nil
}

// decisionErr maps an accept or reject refused by the call.
func decisionErr(id string, err error) error {
	switch {
	case errors.Is(err, conversation.ErrNotControlled):
		return httpx.NotFound("no webhook-routed call %s is ringing", id)
	case errors.Is(err, conversation.ErrCallAnswered):
		return httpx.Conflict("call_id", "call %s is already answered or rejected", id)
	case errors.Is(err, conversation.ErrCallOver):
		return httpx.Conflict("call_id", "call %s has ended", id)
	}
	return err
}

// accept is POST /v1/realtime/calls/{call_id}/accept: the body is the
// session configuration (type "realtime", model, instructions, voice,
// tools, audio, … as a session.update's session, either placement of the
// voice and turn detection), checked as a session.update is (its model
// against the key's ACL); the call's model session opens with it and the
// call is answered. {} once accepted.
func (s *Service) accept(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("call_id")
	if s.forwarded(w, r, id) {
		return nil
	}
	if r.ContentLength == 0 {
		return httpx.BadRequest("type", "the body is the session configuration: type (realtime) is required")
	}
	var cfg realtime.SessionConfig
	if err := httpx.Decode(r, 0, &cfg); err != nil {
		return err
	}
	if cfg.Type == "" {
		return httpx.BadRequest("type", "type is required: realtime")
	}
	if err := checkSession(&cfg); err != nil {
		return bodyParam(configErr(err))
	}
	if cfg.Model != "" || cfg.Reasoning != nil {
		model := cfg.Model
		if model == "" {
			model = realtime.DefaultModel
		}
		var allows func(string) bool
		if p := httpx.PrincipalFrom(r.Context()); p != nil {
			allows = p.AllowsModel
		}
		if he := (policy{allows: allows}).check("model", model, cfg.Reasoning); he != nil {
			return he
		}
	}
	rc, err := s.ringingCall(r)
	if err != nil {
		return err
	}
	if err := rc.Accept(cfg); err != nil {
		return decisionErr(id, err)
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// bodyParam names a session member as the accept body holds it: the
// body is the session, so "session.voice" is "voice".
func bodyParam(err error) error {
	var he *httpx.Error
	if errors.As(err, &he) {
		he.Param = strings.TrimPrefix(he.Param, "session.")
		he.Message = strings.ReplaceAll(he.Message, "session.", "")
	}
	return err
}

type rejectRequest struct {
	StatusCode *int `json:"status_code"`
}

// reject is POST /v1/realtime/calls/{call_id}/reject: the ringing call is
// refused with status_code (a SIP final error status, 400 to 699; default
// 603 Decline) and the status's reason phrase. {} once it is decided.
func (s *Service) reject(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("call_id")
	if s.forwarded(w, r, id) {
		return nil
	}
	var req rejectRequest
	if r.ContentLength != 0 {
		if err := httpx.Decode(r, 0, &req); err != nil {
			return err
		}
	}
	status := DefaultRejectStatus
	if req.StatusCode != nil {
		status = *req.StatusCode
		if status < 400 || status > 699 {
			return httpx.BadRequest("status_code", "status_code must be a SIP final error status from 400 to 699 (a redirection needs a Contact the API does not take)")
		}
	}
	rc, err := s.ringingCall(r)
	if err != nil {
		return err
	}
	if err := rc.Reject(status); err != nil {
		return decisionErr(id, err)
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
