package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/sip"
	"switchboard/webhook"
)

// liveCall finds the call of a call-control request: 404 when unknown or
// of another team, 409 when not answered yet or already over.
func (s *Service) liveCall(r *http.Request) (*call.Call, *entry, error) {
	id := r.PathValue("call_id")
	c, ok := s.opts.Calls.Get(id)
	if !ok {
		return nil, nil, httpx.NotFound("no call %s", id)
	}
	p := httpx.PrincipalFrom(r.Context())
	e := s.entry(id)
	team := ""
	if e != nil {
		team = e.teamID
	} else if rt := c.SIP().Route(); rt != nil {
		if res, err := s.opts.Numbers.Resolve(r.Context(), rt.PhoneNumber); err == nil {
			team = res.TeamID
		}
	}
	if p == nil || team != p.TeamID {
		return nil, nil, httpx.NotFound("no call %s", id)
	}
	switch st := c.Snapshot().State; st {
	case call.StateActive:
		return c, e, nil
	case call.StateRinging:
		return nil, nil, httpx.Conflict("call_id", "call %s is not answered yet", id)
	default:
		return nil, nil, httpx.Conflict("call_id", "call %s has ended", id)
	}
}

type referRequest struct {
	TargetURI string `json:"target_uri"`
}

// refer is POST /v1/realtime/calls/{call_id}/refer: it sends REFER to the
// caller's side and answers {} once the far end accepted it; the NOTIFY
// progress is followed in the background (reported to the controller, the
// call record and the webhook) and the leg ends when the transfer
// succeeds. A refused REFER is 409.
func (s *Service) refer(w http.ResponseWriter, r *http.Request) error {
	var req referRequest
	if err := httpx.Decode(r, 0, &req); err != nil {
		return err
	}
	if err := agent.CheckTransferURI(req.TargetURI); err != nil {
		return httpx.BadRequest("target_uri", "target_uri must be tel:+E.164 or sip:user@host: %v", err)
	}
	c, e, err := s.liveCall(r)
	if err != nil {
		return err
	}
	accepted := make(chan error, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.transfer(c, e, req.TargetURI, accepted)
	}()
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

// transfer runs one REFER to its end. accepted gets nil once the far
// end accepted it, or the error that refused it.
func (s *Service) transfer(c *call.Call, e *entry, target string, accepted chan<- error) {
	log := c.Logger().With().Str("target_uri", target).Logger()
	report := func(status string, code int) {
		c.Note(call.Note{Kind: call.NoteTransfer, Text: status, Data: map[string]any{"target_uri": target, "sip_status": code, "by": "api"}})
		if e != nil {
			e.cc.TransferUpdate(target, status, code)
			if status != "progress" {
				s.lifecycle(c, e, webhook.NewCallTransfer(time.Now(), webhook.CallTransfer{CallID: c.ID(), TargetURI: target, Status: status, SIPStatus: code}))
			}
		}
	}
	first := true
	err := c.SIP().TransferWithProgress(c.SIP().Context(), target, "", func(code int) {
		switch {
		case first:
			first = false
			accepted <- nil
			report(webhook.TransferAccepted, code)
		case code < 200:
			report("progress", code)
		}
	})
	if first {
		accepted <- err
		return
	}
	if err == nil {
		log.Info().Msg("transfer completed: ending our leg")
		report(webhook.TransferCompleted, 200)
		s.end(c, e, "transferred")
		return
	}
	code := 0
	var se *sip.StatusError
	if errors.As(err, &se) {
		code = se.Status
	}
	log.Warn().Err(err).Msg("transfer failed: the call stays")
	report(webhook.TransferFailed, code)
	if e != nil {
		msg := fmt.Sprintf("The transfer of the call to %s failed", target)
		if se != nil {
			msg += fmt.Sprintf(": %d %s", se.Status, se.Reason)
		}
		ctx, cancel := context.WithTimeout(c.SIP().Context(), 5*time.Second)
		defer cancel()
		if err := e.cc.Tell(ctx, msg+". The caller is still on the line: tell them."); err != nil {
			log.Debug().Err(err).Msg("model not told about the failed transfer")
		}
	}
}

// end hangs up a call with reason: through its conversation when this
// service owns it (so the call record says who ended it), else directly.
func (s *Service) end(c *call.Call, e *entry, reason string) {
	if e != nil {
		e.cc.Hangup(reason, webhook.EndedByController)
		return
	}
	c.Hangup(reason)
}

// hangupReason goes into the BYE's Reason header.
const hangupReason = "hung up by the API"

// hangup is POST /v1/realtime/calls/{call_id}/hangup: BYE with a Reason
// header, then {} once the call is ending.
func (s *Service) hangup(w http.ResponseWriter, r *http.Request) error {
	c, e, err := s.liveCall(r)
	if err != nil {
		return err
	}
	c.Note(call.Note{Kind: call.NoteEvent, Text: hangupReason})
	s.end(c, e, hangupReason)
	select {
	case <-c.SIP().Context().Done():
	case <-time.After(5 * time.Second):
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
	c, _, err := s.liveCall(r)
	if err != nil {
		return err
	}
	if err := c.SendDTMF(r.Context(), req.Digits); err != nil {
		if errors.Is(err, call.ErrNotActive) {
			return httpx.Conflict("call_id", "call %s is not active", c.ID())
		}
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
