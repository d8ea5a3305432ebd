package sip

import (
	"context"
	"errors"
	"net/netip"
	"runtime/debug"
	"strings"

	"github.com/emiago/sipgo/sip"
	"github.com/rs/zerolog"
)

// onInvite admits or refuses a new call, or hands a re-INVITE to its
// dialog. checkRequest has passed (guard), so Call-ID, CSeq, From, To and
// Via are there, once each.
func (s *Server) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if tag, _ := req.To().Params.Get("tag"); tag != "" {
		c := s.lookup(req)
		if c == nil {
			s.refuse(req, tx, 481, "Call/Transaction Does Not Exist")
			return
		}
		c.onOffer(req, tx)
		return
	}
	received := s.now()
	src, err := netip.ParseAddrPort(req.Source())
	log := s.log.With().Str("sip_call_id", req.CallID().Value()).Str("src", req.Source()).Str("transport", req.Transport()).Logger()
	// refuse turns the INVITE away once and counts it against the
	// source; answer turns it away without blaming the source (we are
	// full or stopping).
	// proceeding: sipgo has sent 100 Trying by now (Timer_1xx after the
	// INVITE), so the caller no longer retransmits it (endRefused).
	proceeding := func() bool { return s.now().Sub(received) >= sip.Timer_1xx }
	refuse := func(status int, reason, result string, headers ...sip.Header) {
		if !s.refuseAfter(req, tx, proceeding(), status, reason, headers...) {
			result = ResultRateLimited // in flight when its source was blocked
		}
		s.metrics.InviteResult(result)
	}
	answer := func(status int, reason, result string, headers ...sip.Header) {
		s.respond(req, tx, status, reason, nil, headers...)
		endRefused(req, tx, proceeding())
		s.metrics.InviteResult(result)
		s.floodLog.Info().Str("src", req.Source()).Int("status", status).Str("result", result).Msg("invite refused")
	}
	if err != nil {
		refuse(400, "Bad Request (source address)", ResultBadRequest)
		return
	}
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	if s.draining.Load() {
		answer(503, "Service Unavailable", ResultDraining, s.retryAfter())
		return
	}
	if s.limiter.blocked(src.Addr()) {
		refuse(403, "Forbidden", ResultRateLimited)
		return
	}
	// RFC 3261 section 8.2.3: a body we cannot read is 415, an Accept
	// that rules out SDP 406 (RFC 4475 invut, sdp01); both before any
	// routing work.
	if r := contentRefusal(req); r != nil {
		refuse(r.status, r.reason, ResultNoCodec, r.headers...)
		return
	}
	if r := s.timerRefusal(req); r != nil {
		// RFC 4028 section 8.1: the caller retries with our Min-SE.
		answer(r.status, r.reason, ResultIntervalTooSmall, r.headers...)
		return
	}
	if !s.reserve() {
		answer(503, "Service Unavailable", ResultOverloaded, s.retryAfter())
		return
	}
	handedOver := false
	defer func() {
		if !handedOver {
			s.release()
		}
	}()
	// 100 Trying only once the call is admitted (below): refusals are
	// decided in microseconds and answered once to a caller still
	// retransmitting its INVITE; sipgo sends 100 Trying itself if the
	// number lookup takes longer than Timer_1xx.

	e164, err := s.calledNumber(req)
	if err != nil {
		refuse(404, "Not Found", ResultNotFound)
		return
	}
	log = log.With().Str("called", e164).Logger()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
	route, err := s.numbers.LookupNumber(ctx, e164)
	cancel()
	switch {
	case errors.Is(err, ErrNumberNotFound):
		refuse(404, "Not Found", ResultNotFound)
		return
	case err != nil:
		log.Error().Err(err).Msg("number lookup failed")
		answer(500, "Server Internal Error", ResultError)
		return
	}
	if len(route.AllowedAddresses) > 0 && !allowed(route.AllowedAddresses, src.Addr()) {
		refuse(403, "Forbidden", ResultForbidden)
		return
	}
	if route.AuthUsername != "" && !s.authenticate(req, tx, route, src.Addr(), log, proceeding()) {
		return
	}
	var offer *parsedSDP
	var params MediaParams
	var offered []Codec
	switch ct := req.ContentType(); {
	case len(req.Body()) == 0:
		// RFC 3261 section 13.2.1, RFC 3264: a delayed offer. Our offer
		// (the number's codecs in its order) goes in the first reliable
		// response (the 200 OK, or a reliable 180 under 100rel) and the
		// caller's answer comes in its ACK (or PRACK).
		if offered, err = offerCodecs(route.Codecs); err != nil {
			log.Error().Err(err).Msg("the number's codecs cannot be offered")
			refuse(488, "Not Acceptable Here", ResultNoCodec, sip.NewHeader("Warning", `305 switchboard "Incompatible media format"`))
			return
		}
		params = delayedOfferParams(offered)
	case ct == nil || !isSDP(ct.Value()):
		refuse(415, "Unsupported Media Type", ResultNoCodec, sip.NewHeader("Accept", "application/sdp"))
		return
	default:
		if offer, err = parseSDP(req.Body()); err != nil {
			refuse(400, "Bad Request", ResultBadRequest)
			return
		}
		if params, err = offer.negotiate(route.Codecs); err != nil {
			refuse(488, "Not Acceptable Here", ResultNoCodec, sip.NewHeader("Warning", `305 switchboard "Incompatible media format"`))
			return
		}
	}
	if params, err = s.srtpRules(req.Transport(), route).secure(offer, params, SDES{}); err != nil {
		refuse(488, "Not Acceptable Here", ResultNoCodec, srtpWarning(err))
		return
	}

	s.respond(req, tx, 100, "Trying", nil)
	call := newInboundCall(s, req, tx, route, src, offer, params, log)
	call.offered = offered
	call.received = received
	call.reliable = requires(req, tag100rel)
	if t := s.negotiateTimer(req); t != nil {
		call.timer.Store(t)
	}
	handedOver = true
	s.metrics.InviteResult(ResultAccepted)
	call.log.Info().Str("from", call.From()).Str("media", params.String()).Bool("delayed_offer", offer == nil).
		Bool("reliable_provisional", call.reliable).Msg("call admitted")
	s.handleCall(call)
	call.handlerReturned()
}

// handleCall runs the Handler; a panic in it ends this call only (500
// while ringing, BYE with a Reason once answered), logged with its stack.
func (s *Server) handleCall(call *Call) {
	defer func() {
		if v := recover(); v != nil {
			call.log.Error().Interface("panic", v).Str("stack", string(debug.Stack())).Msg("call handler panicked: ending this call")
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
			defer cancel()
			_ = call.hangup(ctx, ErrInternal, "internal error")
		}
	}()
	s.handler.HandleCall(call.ctx, call)
}

func allowed(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// authenticate runs the digest exchange for an INVITE and reports whether
// the call may go on; when not, it has answered the INVITE.
func (s *Server) authenticate(req *sip.Request, tx sip.ServerTransaction, route *Route, src netip.Addr, log zerolog.Logger, proceeding bool) bool {
	credHeader, chalHeader, reason := "Authorization", "WWW-Authenticate", "Unauthorized"
	if s.opts.ChallengeStatus == 407 {
		credHeader, chalHeader, reason = "Proxy-Authorization", "Proxy-Authenticate", "Proxy Authentication Required"
	}
	var values []string
	for _, h := range req.GetHeaders(credHeader) {
		values = append(values, h.Value())
	}
	res := s.auth.verify(values, string(req.Method), route.AuthUsername, route.AuthPassword)
	challenge := func(stale bool) {
		var hs []sip.Header
		for _, c := range s.auth.challenges(stale) {
			hs = append(hs, sip.NewHeader(chalHeader, c))
		}
		s.respond(req, tx, s.opts.ChallengeStatus, reason, nil, hs...)
		endRefused(req, tx, proceeding) // the retry is a new INVITE
	}
	switch res.verdict {
	case authOK:
		log.Debug().Str("auth_username", res.username).Msg("digest authentication passed")
		return true
	case authStale:
		challenge(true)
		s.metrics.InviteResult(ResultChallenged)
	case authMissing:
		challenge(false)
		s.metrics.InviteResult(ResultChallenged)
	case authFailed:
		// Never log the password or the response hash.
		log.Warn().Str("auth_username", res.username).Str("reason", res.reason).Msg("digest authentication failed")
		if s.limiter.fail(src) {
			log.Warn().Int("limit", s.opts.AuthFailLimit).Dur("window", s.opts.AuthFailWindow).Msg("source blocked after repeated authentication failures")
			s.refuseAfter(req, tx, proceeding, 403, "Forbidden")
			s.metrics.InviteResult(ResultRateLimited)
			return false
		}
		challenge(false)
		s.metrics.InviteResult(ResultAuthFailed)
	}
	return false
}

// contentRefusal is 415 for an INVITE body that is not SDP, 406 for an
// Accept that rules SDP out, nil otherwise.
func contentRefusal(req *sip.Request) *refusal {
	accept := sip.NewHeader("Accept", "application/sdp")
	if ct := req.ContentType(); ct != nil && len(req.Body()) > 0 && !isSDP(ct.Value()) {
		return &refusal{status: 415, reason: "Unsupported Media Type", headers: []sip.Header{accept}}
	}
	if hs := req.GetHeaders("Accept"); len(hs) > 0 {
		for _, h := range hs {
			for _, t := range strings.Split(h.Value(), ",") {
				t = strings.ToLower(strings.TrimSpace(strings.Split(t, ";")[0]))
				if t == "application/sdp" || t == "application/*" || t == "*/*" || t == "" {
					return nil
				}
			}
		}
		return &refusal{status: 406, reason: "Not Acceptable", headers: []sip.Header{accept}}
	}
	return nil
}

func isSDP(contentType string) bool {
	return strings.EqualFold(strings.TrimSpace(strings.Split(contentType, ";")[0]), "application/sdp")
}
