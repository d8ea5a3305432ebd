package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/sip"
)

// forwarded sends a call-control request to the node that holds its call
// when that is another node, and reports whether it did.
func (s *Service) forwarded(w http.ResponseWriter, r *http.Request, id string) bool {
	if _, ok := s.opts.Calls.Get(id); ok || s.opts.Remote == nil {
		return false
	}
	return s.opts.Remote.Forward(w, r, id)
}

// liveCall finds the call of a call-control request: 404 when unknown or
// of another team, 409 when not answered yet or already over (also once
// it left the live registry: its record says it ended).
func (s *Service) liveCall(r *http.Request) (Call, error) { return s.findCall(r, noRinging) }

// Which ringing calls a call-control request takes besides answered ones.
func noRinging(Call) bool { return false }

// placedRinging takes a call the appliance placed while it rings (its
// hangup cancels the INVITE).
func placedRinging(rc Call) bool { return rc.Phone().Info().Direction == call.DirectionOutbound }

// anyRinging takes every ringing call (a webhook-routed call sent to a
// stream before a controller answered it).
func anyRinging(Call) bool { return true }

// findCall is liveCall; ringing says which ringing calls it also takes.
func (s *Service) findCall(r *http.Request, ringing func(Call) bool) (Call, error) {
	id := r.PathValue("call_id")
	rc, ok := s.opts.Calls.Get(id)
	p := httpx.PrincipalFrom(r.Context())
	if p == nil {
		return nil, httpx.NotFound("no call %s", id)
	}
	if !ok && s.opts.Records != nil {
		if c, err := s.opts.Records.Get(r.Context(), id); err == nil && c.TeamID == p.TeamID && !c.EndTime.IsZero() {
			return nil, httpx.Conflict("call_id", "call %s has ended", id)
		}
	}
	if !ok || rc.TeamID() != p.TeamID {
		return nil, httpx.NotFound("no call %s", id)
	}
	switch st := rc.Phone().Snapshot().State; st {
	case call.StateActive:
		return rc, nil
	case call.StateRinging:
		if ringing(rc) {
			return rc, nil
		}
		return nil, httpx.Conflict("call_id", "call %s is not answered yet", id)
	default:
		return nil, httpx.Conflict("call_id", "call %s has ended", id)
	}
}

type referRequest struct {
	TargetURI string `json:"target_uri"`
	// Headers are added to the REFER (sip.DecodeHeaders).
	Headers json.RawMessage `json:"headers"`
}

// sipHeaders reads the headers field of a request (sip.DecodeHeaders: the
// one check of the headers the API asks the appliance to send).
func sipHeaders(raw json.RawMessage) ([]call.Header, error) {
	hs, err := sip.DecodeHeaders(raw)
	var he *sip.HeaderError
	if errors.As(err, &he) {
		return nil, httpx.BadRequest(he.Param("headers"), "%s", he.Error())
	}
	if err != nil {
		return nil, err
	}
	out := make([]call.Header, len(hs))
	for i, h := range hs {
		out[i] = call.Header{Name: h.Name, Value: h.Value}
	}
	return out, nil
}

// refer is POST /v1/realtime/calls/{call_id}/refer: it sends REFER to the
// caller's side (with the request's headers) and answers {} once the far
// end accepted it; the NOTIFY progress is followed in the background
// (reported to the controller, the call record and the webhook) and the
// leg ends when the transfer succeeds. A refused REFER is 409.
func (s *Service) refer(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var req referRequest
	if err := httpx.Decode(r, 0, &req); err != nil {
		return err
	}
	if err := agent.CheckTransferURI(req.TargetURI); err != nil {
		return httpx.BadRequest("target_uri", "target_uri must be tel:+E.164 or sip:user@host: %v", err)
	}
	hs, err := sipHeaders(req.Headers)
	if err != nil {
		return err
	}
	rc, err := s.liveCall(r)
	if err != nil {
		return err
	}
	accepted := rc.Transfer(req.TargetURI, hs...)
	t := time.NewTimer(s.opts.TransferAcceptTimeout)
	defer t.Stop()
	select {
	case err := <-accepted:
		if err != nil {
			return httpx.Conflict("target_uri", "the caller's side did not accept the transfer: %v", err)
		}
	case <-t.C:
		return &httpx.Error{Status: http.StatusGatewayTimeout, Code: "timeout", Message: "the caller's side did not answer the REFER in time; the transfer may still happen"}
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// hangupReason goes into the BYE's Reason header.
const hangupReason = "hung up by the API"

// hangupRequest is the optional body of the hangup endpoint.
type hangupRequest struct {
	// Reason is sent as the BYE's Reason header (sip.ReasonValue): an
	// RFC 3326 value (Q.850;cause=16;text="…") or a sentence.
	Reason *string `json:"reason"`
}

// hangup is POST /v1/realtime/calls/{call_id}/hangup: BYE with a Reason
// header, the request's reason or the appliance's (a call the appliance
// placed and that still rings: CANCEL), then {} once the call is ending.
func (s *Service) hangup(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var req hangupRequest
	if r.ContentLength != 0 {
		if err := httpx.Decode(r, 0, &req); err != nil {
			return err
		}
	}
	text, note := hangupReason, call.Note{Kind: call.NoteEvent, Text: hangupReason}
	var hs []call.Header
	if req.Reason != nil {
		v, err := sip.ReasonValue(*req.Reason)
		if err != nil {
			return httpx.BadRequest("reason", "reason must be an RFC 3326 reason (Q.850;cause=16;text=\"…\") or a sentence: %v", err)
		}
		hs = []call.Header{{Name: "Reason", Value: v}}
		text = hangupReason + ": " + strings.TrimSpace(*req.Reason)
		note.Data = map[string]string{"reason": v}
	}
	rc, err := s.findCall(r, placedRinging)
	if err != nil {
		return err
	}
	p := rc.Phone()
	p.Note(note)
	if p.Snapshot().State == call.StateRinging {
		p.Hangup(text, hs...) // a placed call: CANCEL
	} else {
		rc.Hangup(text, hs...)
	}
	t := time.NewTimer(s.opts.HangupWait)
	defer t.Stop()
	select {
	case <-p.Context().Done():
	case <-t.C:
	case <-r.Context().Done():
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

type dtmfRequest struct {
	Digits string `json:"digits"`
}

// dtmf is POST /v1/realtime/calls/{call_id}/dtmf: the digits go to the
// caller's side as RFC 4733 events (in-band tones when none was
// negotiated); {} once they are sent.
func (s *Service) dtmf(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var req dtmfRequest
	if err := httpx.Decode(r, 0, &req); err != nil {
		return err
	}
	if len(req.Digits) == 0 || len(req.Digits) > 64 {
		return httpx.BadRequest("digits", "digits must be 1 to 64 keys")
	}
	for i := 0; i < len(req.Digits); i++ {
		if !dtmf.ValidDigit(req.Digits[i]) {
			return httpx.BadRequest("digits", "digits may hold only 0-9, *, # and A-D")
		}
	}
	rc, err := s.liveCall(r)
	if err != nil {
		return err
	}
	if err := rc.SendDTMF(r.Context(), req.Digits); err != nil {
		if errors.Is(err, call.ErrNotActive) {
			return httpx.Conflict("call_id", "call %s is not active", rc.Phone().ID())
		}
		if errors.Is(err, call.ErrNotSupported) {
			return httpx.Conflict("call_id", "call %s cannot send digits (a browser call has no keypad)", rc.Phone().ID())
		}
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
