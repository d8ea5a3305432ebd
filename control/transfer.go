package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/conversation"
	"switchboard/transfer"
)

// transferRequest is the body of POST /v1/calls/{call_id}/transfer.
type transferRequest struct {
	TargetURI     string          `json:"target_uri"`
	Mode          string          `json:"mode"`
	Replaces      bool            `json:"replaces"`
	Briefing      string          `json:"briefing"`
	HoldAudio     string          `json:"hold_audio"`
	Accept        string          `json:"accept"`
	TimeoutS      *int            `json:"timeout_s"`
	Headers       json.RawMessage `json:"headers"`
	KeepListening bool            `json:"keep_listening"`
}

// transferAccepted is the 202 of a transfer: it runs in the background,
// its steps go to the controller, the webhook and the call record.
type transferAccepted struct {
	TransferID string `json:"transfer_id"`
	CallID     string `json:"call_id"`
	Mode       string `json:"mode"`
	TargetURI  string `json:"target_uri"`
}

// transfer is POST /v1/calls/{call_id}/transfer: 202 with the transfer's
// id once it started (the caller holds meanwhile); 400 naming the field
// for a bad request or a target the call may not reach, 409 while another
// transfer runs or once the call ended.
func (s *Service) transfer(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var body transferRequest
	if err := httpx.Decode(r, 0, &body); err != nil {
		return err
	}
	req := transfer.Request{TargetURI: body.TargetURI, Mode: transfer.Mode(body.Mode), Replaces: body.Replaces, Briefing: body.Briefing,
		HoldAudio: body.HoldAudio, Accept: transfer.Accept(body.Accept), KeepListening: body.KeepListening}
	if body.TimeoutS != nil {
		req.Timeout = time.Duration(*body.TimeoutS) * time.Second
		if req.Timeout == 0 {
			return httpx.BadRequest("timeout_s", "timeout_s must be %d to %d seconds", int(transfer.MinTimeout/time.Second), int(transfer.MaxTimeout/time.Second))
		}
	}
	if err := transfer.Check("", &req); err != nil {
		return err
	}
	headers, err := sipHeaders(body.Headers)
	if err != nil {
		return err
	}
	req.Headers = headers
	rc, err := s.liveCall(r)
	if err != nil {
		return err
	}
	t, err := rc.Handoff(r.Context(), req)
	if err != nil {
		return handoffErr(rc, err)
	}
	httpx.WriteJSON(w, http.StatusAccepted, transferAccepted{TransferID: t.ID(), CallID: rc.Phone().ID(), Mode: string(t.Request().Mode),
		TargetURI: t.Request().TargetURI})
	return nil
}

// holdRequest is the body of POST /v1/calls/{call_id}/hold.
type holdRequest struct {
	Audio string `json:"audio"`
}

// hold is POST /v1/calls/{call_id}/hold: the caller hears the hold audio
// (music by default) and the model hears nothing until resume.
func (s *Service) hold(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var body holdRequest
	if r.ContentLength != 0 { // no body: the defaults (music)
		if err := httpx.Decode(r, 0, &body); err != nil {
			return err
		}
	}
	rc, err := s.liveCall(r)
	if err != nil {
		return err
	}
	if err := rc.Hold(r.Context(), body.Audio); err != nil {
		return handoffErr(rc, err)
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// resume is POST /v1/calls/{call_id}/resume: the caller is back with the
// conversation.
func (s *Service) resume(w http.ResponseWriter, r *http.Request) error {
	if s.forwarded(w, r, r.PathValue("call_id")) {
		return nil
	}
	var body struct{}
	if r.ContentLength != 0 { // it takes no field: {} or no body
		if err := httpx.Decode(r, 0, &body); err != nil {
			return err
		}
	}
	rc, err := s.liveCall(r)
	if err != nil {
		return err
	}
	if err := rc.Resume(r.Context()); err != nil {
		return handoffErr(rc, err)
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// handoffErr is the API's answer to a transfer or hold the call refused.
func handoffErr(rc Call, err error) error {
	var he *httpx.Error
	id := rc.Phone().ID()
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, conversation.ErrTransferRunning):
		return &httpx.Error{Status: http.StatusConflict, Code: "transfer_in_progress", Param: "call_id",
			Message: "call " + id + " has a transfer in progress"}
	case errors.Is(err, conversation.ErrHandedOff):
		return httpx.Conflict("call_id", "the caller of call %s was transferred to a human already", id)
	case errors.Is(err, conversation.ErrNotHeld):
		return httpx.Conflict("call_id", "call %s is not on hold", id)
	case errors.Is(err, conversation.ErrNoTransfers):
		return httpx.Conflict("call_id", "call %s cannot be transferred or held (a line test, or transfers are not configured)", id)
	case errors.Is(err, call.ErrNotActive):
		return httpx.Conflict("call_id", "call %s is not active", id)
	}
	return err
}
