package sip

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

type callState int

const (
	stateEarly     callState = iota // INVITE received, no final response
	stateAnswering                  // 200 OK sent, waiting for ACK
	stateConfirmed                  // ACK received
	stateEnded
)

// Call is one call of the Server: received (an INVITE the server
// admitted, handed to the Handler) or placed (Place; Outbound reports
// which). Whoever took it owns it: it rings, answers (for a placed call:
// dials) or rejects it, and hangs up. Its methods are safe for concurrent
// use.
type Call struct {
	srv    *Server
	id     string
	log    zerolog.Logger
	route  *Route
	invite *sip.Request
	tx     sip.ServerTransaction
	src    netip.AddrPort
	key    string
	dlg    *dialog
	// headers are the INVITE's headers kept at admission (Headers).
	headers []Header

	ctx     context.Context
	cancel  context.CancelCauseFunc
	endOnce sync.Once

	acks    chan *sip.Request
	updates chan MediaParams
	infos   chan Info

	mu         sync.Mutex
	state      callState
	offer      *parsedSDP
	initial    MediaParams
	params     MediaParams
	sdp        *localSDP
	local      netip.AddrPort
	busy       bool
	remoteCSeq uint32
	refer      chan int
	received   time.Time

	// Offer/answer beyond the basic INVITE-with-SDP (set at admission).
	delayed  bool    // the INVITE had no SDP (or we place the call): we offer, the peer answers
	offered  []Codec // our offer's codecs, in its order (delayed)
	reliable bool    // the caller requires 100rel (RFC 3262)

	// Reliable provisional responses (c.mu).
	rseq      uint32
	pending   *reliableResponse
	ringHeld  bool // a 180 waiting for our offer (delayed offer + 100rel)
	offerSent bool // our offer went out in a reliable 180

	finalOnce sync.Once
	finalSent chan struct{} // closed when the final response is sent

	// placed is set for a call the server places (place.go): Answer
	// dials, Ringing does nothing, Reject and an early hangup cancel.
	placed *placement

	// Session timer (RFC 4028, timer.go): nil without one.
	timer       atomic.Pointer[sessionTimer]
	refreshes   chan struct{} // a refresh from the peer was accepted
	peerUpdates bool          // the caller's Allow lists UPDATE
	// cancelHook is the call as the INVITE transaction's CANCEL hook
	// sees it: nil once the call has ended. It is its own allocation, so
	// that the hook does not keep the call.
	cancelHook *atomic.Pointer[Call]
}

// ReceivedAt is when the INVITE arrived (before admission checks).
func (c *Call) ReceivedAt() time.Time { return c.received }

func newInboundCall(s *Server, req *sip.Request, tx sip.ServerTransaction, route *Route, src netip.AddrPort, offer *parsedSDP, params MediaParams, log zerolog.Logger) *Call {
	id := uuid.NewString()
	from, to := req.From(), req.To()
	fromTag, _ := from.Params.Get("tag")
	c := &Call{
		srv: s, id: id, route: route, invite: req, tx: tx, src: src,
		log:     log.With().Str("call_id", id).Logger(),
		acks:    make(chan *sip.Request, 4),
		updates: make(chan MediaParams, 4),
		infos:   make(chan Info, 64),
		offer:   offer, initial: params, params: params,
		sdp:         newLocalSDP(uint64(time.Now().Unix())),
		remoteCSeq:  req.CSeq().SeqNo,
		delayed:     offer == nil,
		finalSent:   make(chan struct{}),
		refreshes:   make(chan struct{}, 1),
		peerUpdates: listsTag(req, string(sip.UPDATE), "Allow"),
		headers:     s.forward.pick(req),
	}
	c.dlg = &dialog{
		client: s.client, callID: req.CallID().Value(),
		local: to.Address, localTag: sip.GenerateTagN(16),
		remote: from.Address, remoteTag: fromTag,
		contact:   s.contactFor(req.Transport()),
		transport: req.Transport(),
		peer:      req.Source(),
		cseq:      uint32(rand.IntN(1 << 15)),
	}
	c.dlg.setTarget(req.Contact())
	if req.Contact() == nil {
		// An RFC 2543 caller may send no Contact (RFC 4475 inv2543):
		// requests in the dialog go to its From URI (and, as always, to
		// the INVITE's source address).
		c.dlg.target = *from.Address.Clone()
	}
	// RFC 3261 section 12.1.1: the UAS's route set is the Record-Route
	// in order.
	c.dlg.routeSet = recordRoute(req.GetHeaders("Record-Route"))
	c.key = dialogKey(c.dlg.callID, c.dlg.localTag)
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	s.register(c)
	// The transaction outlives the call (sipgo keeps it for its timers,
	// 32 s past the final response): its CANCEL hook reaches the call
	// through a pointer that end clears, so an ended call is not kept.
	hook := new(atomic.Pointer[Call])
	hook.Store(c)
	c.cancelHook = hook
	if !tx.OnCancel(func(*sip.Request) {
		if c := hook.Load(); c != nil {
			c.canceled()
		}
	}) {
		c.canceled()
	}
	return c
}

func (c *Call) canceled() {
	c.mu.Lock()
	early := c.state == stateEarly
	c.mu.Unlock()
	if early {
		c.log.Info().Msg("call canceled by caller")
		c.end(ErrCanceled)
	}
}

// ID is the call id (a UUID) that names the call in logs, webhooks and
// the API.
func (c *Call) ID() string { return c.id }

// Route is the matched phone-number route.
func (c *Call) Route() *Route { return c.route }

// From is the caller's user part (usually the calling number).
func (c *Call) From() string { return c.invite.From().Address.User }

// To is the called user part as received.
func (c *Call) To() string { return c.invite.To().Address.User }

// FromURI is the full From URI.
func (c *Call) FromURI() string { return c.invite.From().Address.String() }

// ToURI is the full To URI.
func (c *Call) ToURI() string { return c.invite.To().Address.String() }

// SIPCallID is the SIP Call-ID header.
func (c *Call) SIPCallID() string { return c.dlg.callID }

// SourceAddr is the address the INVITE came from.
func (c *Call) SourceAddr() netip.AddrPort { return c.src }

// Transport is "UDP", "TCP" or "TLS".
func (c *Call) Transport() string { return c.dlg.transport }

// Logger is the call's child logger (it carries call_id).
func (c *Call) Logger() zerolog.Logger { return c.log }

// Offer is the media negotiated from the INVITE's offer.
func (c *Call) Offer() MediaParams { return c.initial }

// Media is the current media (changed by accepted re-INVITEs/UPDATEs).
func (c *Call) Media() MediaParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.params
}

// Context is done when the dialog ends; context.Cause tells why
// (ErrRemoteBye, ErrCanceled, ErrLocalHangup, ErrAckTimeout, ErrRejected,
// ErrShutdown).
func (c *Call) Context() context.Context { return c.ctx }

// MediaUpdates delivers the media accepted from re-INVITEs and UPDATEs
// (hold: Direction sendonly/inactive; unhold; new address; new codec).
// When the reader falls behind, older updates are dropped: the last value
// is always the current one.
func (c *Call) MediaUpdates() <-chan MediaParams { return c.updates }

// Infos delivers SIP INFO requests received in the dialog (answered 200).
func (c *Call) Infos() <-chan Info { return c.infos }

// response builds a response inside this call's dialog.
func (c *Call) response(req *sip.Request, status int, reason string, body []byte) *sip.Response {
	res := sip.NewResponseFromRequest(req, status, reason, body)
	symmetric(req, res)
	if status > 100 {
		if to := res.To(); to != nil {
			to.Params.Add("tag", c.dlg.localTag)
		}
	}
	res.AppendHeader(sip.NewHeader("Server", c.srv.opts.UserAgent))
	if status > 100 && status < 300 && req.IsInvite() {
		contact := c.dlg.contact
		res.AppendHeader(&contact)
	}
	if status >= 200 && status < 300 {
		res.AppendHeader(sip.NewHeader("Allow", allowMethods))
		if req.IsInvite() || req.Method == sip.UPDATE {
			res.AppendHeader(supportedHeader())
			for _, h := range c.timerHeaders() {
				res.AppendHeader(h)
			}
			if req != c.invite {
				c.refreshed(req)
			}
		}
	}
	if len(body) > 0 {
		res.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	}
	return res
}

// Ringing sends 180 Ringing.
func (c *Call) Ringing() error { return c.provisional(180, "Ringing") }

// SessionProgress sends 183 Session Progress without SDP.
func (c *Call) SessionProgress() error { return c.provisional(183, "Session Progress") }

func (c *Call) provisional(status int, reason string) error {
	if c.placed != nil {
		return nil // the callee rings, we send nothing
	}
	c.mu.Lock()
	early := c.state == stateEarly
	reliable := c.reliable
	if early && reliable && c.delayed && !c.offerSent {
		// RFC 3261 section 13.2.1: with no offer in the INVITE, our offer
		// must be in the first reliable response; it waits for
		// MediaReady, which knows our RTP address.
		c.ringHeld = true
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if !early {
		return fmt.Errorf("send %d: %w", status, c.stateErr())
	}
	if reliable {
		return c.sendReliable(status, reason, nil)
	}
	// Never hold c.mu across tx.Respond: the transaction's CANCEL path
	// calls back into the call.
	if err := c.tx.Respond(c.response(c.invite, status, reason, nil)); err != nil {
		return fmt.Errorf("send %d: %w", status, err)
	}
	return nil
}

// finalResponse marks the final response as sent: reliable provisional
// responses stop being retransmitted.
func (c *Call) finalResponse() {
	c.finalOnce.Do(func() { close(c.finalSent) })
}

func (c *Call) stateErr() error {
	if cause := context.Cause(c.ctx); cause != nil {
		return fmt.Errorf("%w: %w", errCallState, cause)
	}
	return errCallState
}

// Reject answers the INVITE with a final error status (e.g. 480, 486,
// 503) and extra headers (e.g. Retry-After), ending the call.
func (c *Call) Reject(status int, reason string, headers ...Header) error {
	if status < 300 || status > 699 {
		return fmt.Errorf("reject: status %d is not a final error status", status)
	}
	if c.placed != nil {
		// A placed call refused before (or while) it dials: the INVITE,
		// if out, is cancelled.
		cause := fmt.Errorf("%w: %d %s", ErrRejected, status, reason)
		c.placed.stop(cause)
		c.end(cause)
		return nil
	}
	c.mu.Lock()
	if c.state != stateEarly {
		c.mu.Unlock()
		return fmt.Errorf("reject: %w", c.stateErr())
	}
	c.state = stateEnded
	c.mu.Unlock()
	res := c.response(c.invite, status, reason, nil)
	for _, h := range headers {
		res.AppendHeader(sip.NewHeader(h.Name, h.Value))
	}
	err := c.tx.Respond(res)
	c.finalResponse()
	// The caller has had provisional responses: the rejection is
	// retransmitted for a bounded time, not until Timer H, whether or not
	// the source ever ACKs (endRefused).
	endRefused(c.invite, c.tx, true)
	c.log.Info().Int("status", status).Msg("call rejected")
	c.end(fmt.Errorf("%w: %d %s", ErrRejected, status, reason))
	if err != nil {
		return fmt.Errorf("reject: %w", err)
	}
	return nil
}

// Hangup ends the call: BYE with `Reason: SIP;cause=200;text="reason"`
// once answered, or 480 before. The call context ends with ErrLocalHangup.
func (c *Call) Hangup(ctx context.Context, reason string) error {
	return c.hangup(ctx, ErrLocalHangup, reason)
}

// HangupWith is Hangup with headers added to the BYE; a Reason among them
// (ReasonValue) replaces the appliance's own.
func (c *Call) HangupWith(ctx context.Context, reason string, headers []Header) error {
	return c.hangup(ctx, ErrLocalHangup, reason, headers...)
}

func (c *Call) hangup(ctx context.Context, cause error, text string, headers ...Header) error {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	switch st {
	case stateEnded:
		return nil
	case stateEarly:
		if c.placed != nil {
			c.placed.stop(cause, headers...) // the dial sends CANCEL (with the Reason given)
			c.end(cause)
			return nil
		}
		status, reason := 480, "Temporarily Unavailable"
		var hs []Header
		if errors.Is(cause, ErrShutdown) {
			status, reason = 503, "Service Unavailable"
			hs = append(hs, Header{"Retry-After", fmt.Sprint(int(c.srv.opts.RetryAfter / time.Second))})
		}
		if errors.Is(cause, ErrInternal) {
			status, reason = 500, "Server Internal Error"
		}
		err := c.Reject(status, reason, hs...)
		c.end(cause)
		return err
	}
	c.end(cause)
	bye := c.dlg.newRequest(sip.BYE, nil, byeHeaders(text, headers)...)
	ctx, cancel := context.WithTimeout(ctx, c.srv.opts.RequestTimeout)
	defer cancel()
	res, err := c.dlg.do(ctx, bye)
	if err != nil {
		return fmt.Errorf("hangup: %w", err)
	}
	c.log.Info().Str("reason", text).Int("bye_status", res.StatusCode).Msg("call hung up")
	return statusErr(bye, res)
}

// end finishes the call once: the context is cancelled with cause and
// the call slot is released.
func (c *Call) end(cause error) {
	c.endOnce.Do(func() {
		c.mu.Lock()
		c.state = stateEnded
		c.mu.Unlock()
		c.cancel(cause)
		c.srv.unregister(c)
		c.srv.release()
		if c.cancelHook != nil { // a placed call has none
			c.cancelHook.Store(nil)
		}
	})
}

// handlerReturned rejects a call the Handler left without final answer.
func (c *Call) handlerReturned() {
	if c.placed != nil {
		return
	}
	c.mu.Lock()
	early := c.state == stateEarly
	c.mu.Unlock()
	if early {
		c.log.Warn().Msg("handler returned without answering: 480")
		_ = c.Reject(480, "Temporarily Unavailable")
	}
}

func (c *Call) onBye(req *sip.Request, tx sip.ServerTransaction) {
	c.srv.respond(req, tx, 200, "OK", nil)
	c.mu.Lock()
	ended := c.state == stateEnded
	c.mu.Unlock()
	if !ended {
		c.log.Info().Msg("caller hung up")
	}
	c.end(ErrRemoteBye)
}

// onOffer handles a re-INVITE or UPDATE: the answer is built from the
// current local SDP (same session id, version bumped when it changes) with
// the mirrored direction, and accepted media is published.
func (c *Call) onOffer(req *sip.Request, tx sip.ServerTransaction) {
	isInvite := req.IsInvite()
	c.mu.Lock()
	switch {
	case c.state == stateEnded:
		c.mu.Unlock()
		c.srv.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
		return
	case c.busy || c.state == stateEarly || (isInvite && c.state != stateConfirmed):
		c.mu.Unlock()
		// RFC 3261 section 14.2: an offer while one is pending gets 491.
		c.srv.respond(req, tx, 491, "Request Pending", nil)
		return
	case req.CSeq().SeqNo <= c.remoteCSeq:
		c.mu.Unlock()
		c.srv.respond(req, tx, 500, "Server Internal Error", nil, sip.NewHeader("Retry-After", "1"))
		return
	}
	if r := c.srv.timerRefusal(req); r != nil {
		c.mu.Unlock()
		c.srv.respond(req, tx, r.status, r.reason, nil, r.headers...)
		return
	}
	c.remoteCSeq = req.CSeq().SeqNo
	c.busy = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
	}()
	c.dlg.setTarget(req.Contact())

	if len(req.Body()) == 0 {
		c.mu.Lock()
		cur := c.sdp.body
		c.mu.Unlock()
		if !isInvite {
			_ = tx.Respond(c.response(req, 200, "OK", nil))
			return
		}
		// Offerless re-INVITE: our current SDP is the offer, the ACK
		// carries the answer.
		res := c.response(req, 200, "OK", cur)
		if err := tx.Respond(res); err != nil {
			return
		}
		ack, err := c.awaitAck(c.ctx, res, req.CSeq().SeqNo, tx)
		if err != nil || len(ack.Body()) == 0 {
			return
		}
		c.mu.Lock()
		params, err := answerMatch(ack.Body(), []Codec{c.params.Codec})
		params.SRTP = c.params.SRTP // our offer repeated our crypto; the keys stay
		c.mu.Unlock()
		if err == nil {
			c.publish(params)
		}
		return
	}
	offer, err := parseSDP(req.Body())
	if err != nil {
		c.srv.respond(req, tx, 400, "Bad Request", nil)
		return
	}
	// The leg's audio runs at its codec's rate for the whole call: the
	// re-offer's codec is chosen among those of that rate.
	cur := c.Media().Codec
	params, err := offer.negotiateAt(c.route.Codecs, cur.AudioRate())
	if err != nil {
		err = fmt.Errorf("%w: the call stays %s", err, cur.Name)
	}
	if err != nil {
		c.log.Info().Err(err).Msg("re-offer refused, keeping current media")
		c.srv.respond(req, tx, 488, "Not Acceptable Here", nil, sip.NewHeader("Warning", `305 switchboard "Incompatible media format"`))
		return
	}
	c.mu.Lock()
	prev := c.params.SRTP
	c.mu.Unlock()
	if params, err = c.srv.srtpRules(c.dlg.transport, c.route).secure(offer, params, prev); err != nil {
		c.log.Info().Err(err).Msg("re-offer refused, keeping current media")
		c.srv.respond(req, tx, 488, "Not Acceptable Here", nil, srtpWarning(err))
		return
	}
	c.mu.Lock()
	body, err := c.sdp.answer(offer, params, c.local, c.srv.opts.RTPPublicIP, params.Direction.Reverse())
	if err != nil {
		c.mu.Unlock()
		c.srv.respond(req, tx, 500, "Server Internal Error", nil)
		return
	}
	c.offer = offer
	c.mu.Unlock()
	res := c.response(req, 200, "OK", body)
	if err := tx.Respond(res); err != nil {
		return
	}
	c.publish(params)
	if isInvite {
		if _, err := c.awaitAck(c.ctx, res, req.CSeq().SeqNo, tx); err != nil {
			c.log.Debug().Err(err).Msg("no ACK for re-INVITE 200")
		}
	}
}

// publish records params as current and delivers them when they changed.
func (c *Call) publish(params MediaParams) {
	c.mu.Lock()
	changed := params != c.params
	c.params = params
	c.mu.Unlock()
	if !changed {
		return
	}
	c.log.Info().Str("media", params.String()).Msg("media updated")
	for {
		select {
		case c.updates <- params:
			return
		default:
		}
		select {
		case <-c.updates: // drop the oldest
		default:
		}
	}
}

// onInfo queues the INFO before it answers 200: sipgo handles each request
// in its own goroutine, so answering first let a later INFO (a sender's
// next DTMF key, sent on our 200) overtake this one.
func (c *Call) onInfo(req *sip.Request, tx sip.ServerTransaction) {
	info := Info{Body: append([]byte(nil), req.Body()...)}
	if ct := req.ContentType(); ct != nil {
		info.ContentType = ct.Value()
	}
	select {
	case c.infos <- info:
	default:
		c.log.Warn().Str("content_type", info.ContentType).Msg("INFO dropped: reader too slow")
	}
	c.srv.respond(req, tx, 200, "OK", nil)
}
