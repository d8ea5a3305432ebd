package sip

import (
	"context"
	"errors"
	"net/netip"
	"strings"

	"github.com/emiago/sipgo/sip"
	"github.com/rs/zerolog"
)

// onInvite admits or refuses a new call, or hands a re-INVITE to its
// dialog.
func (s *Server) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if to := req.To(); to != nil && to.Params.Has("tag") {
		c := s.lookup(req)
		if c == nil {
			s.respond(req, tx, 481, "Call/Transaction Does Not Exist", nil)
			return
		}
		c.onOffer(req, tx)
		return
	}
	received := s.now()
	callID := ""
	if h := req.CallID(); h != nil {
		callID = h.Value()
	}
	src, err := netip.ParseAddrPort(req.Source())
	log := s.log.With().Str("sip_call_id", callID).Str("src", req.Source()).Str("transport", req.Transport()).Logger()
	refuse := func(status int, reason, result string, headers ...sip.Header) {
		s.respond(req, tx, status, reason, nil, headers...)
		s.metrics.InviteResult(result)
		log.Info().Int("status", status).Str("result", result).Msg("invite refused")
	}
	// RFC 3261 §8.1.1: every request carries Call-ID, CSeq, From, To and
	// Via; an INVITE also a Contact. Checked before anything reads them.
	if missing := missingHeader(req); missing != "" || err != nil {
		if missing == "" {
			missing = "source address"
		}
		refuse(400, "Bad Request ("+missing+")", ResultBadRequest)
		return
	}
	s.respond(req, tx, 100, "Trying", nil)
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	if s.draining.Load() {
		refuse(503, "Service Unavailable", ResultDraining, s.retryAfter())
		return
	}
	if s.limiter.blocked(src.Addr()) {
		refuse(403, "Forbidden", ResultRateLimited)
		return
	}
	if !s.reserve() {
		refuse(503, "Service Unavailable", ResultOverloaded, s.retryAfter())
		return
	}
	handedOver := false
	defer func() {
		if !handedOver {
			s.release()
		}
	}()

	user := req.Recipient.User
	if user == "" {
		user = req.To().Address.User
	}
	e164, err := NormalizeNumber(user, s.opts.TrunkPrefix, s.opts.DefaultCountry)
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
		refuse(500, "Server Internal Error", ResultError)
		return
	}
	if len(route.AllowedAddresses) > 0 && !allowed(route.AllowedAddresses, src.Addr()) {
		refuse(403, "Forbidden", ResultForbidden)
		return
	}
	if route.AuthUsername != "" && !s.authenticate(req, tx, route, src.Addr(), log) {
		return
	}
	var offer *parsedSDP
	params := delayedOfferParams()
	switch ct := req.ContentType(); {
	case len(req.Body()) == 0:
		// RFC 3261 section 13.2.1, RFC 3264: a delayed offer. Our offer
		// goes in the first reliable response (the 200 OK, or a reliable
		// 180 under 100rel) and the caller's answer comes in its ACK (or
		// PRACK).
	case ct == nil || !strings.EqualFold(strings.TrimSpace(strings.Split(ct.Value(), ";")[0]), "application/sdp"):
		refuse(415, "Unsupported Media Type", ResultNoCodec, sip.NewHeader("Accept", "application/sdp"))
		return
	default:
		if offer, err = parseSDP(req.Body()); err != nil {
			refuse(400, "Bad Request", ResultBadRequest)
			return
		}
		if params, err = offer.negotiate(); err != nil {
			refuse(488, "Not Acceptable Here", ResultNoCodec, sip.NewHeader("Warning", `305 switchboard "Incompatible media format"`))
			return
		}
	}

	call := newInboundCall(s, req, tx, route, src, offer, params, log)
	call.received = received
	call.reliable = requires(req, tag100rel)
	handedOver = true
	s.metrics.InviteResult(ResultAccepted)
	call.log.Info().Str("from", call.From()).Str("media", params.String()).Bool("delayed_offer", offer == nil).
		Bool("reliable_provisional", call.reliable).Msg("call admitted")
	s.handler.HandleCall(call.ctx, call)
	call.handlerReturned()
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
func (s *Server) authenticate(req *sip.Request, tx sip.ServerTransaction, route *Route, src netip.Addr, log zerolog.Logger) bool {
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
			s.respond(req, tx, 403, "Forbidden", nil)
			s.metrics.InviteResult(ResultRateLimited)
			return false
		}
		challenge(false)
		s.metrics.InviteResult(ResultAuthFailed)
	}
	return false
}

// missingHeader names the first mandatory header an INVITE lacks ("" when
// it has them all).
func missingHeader(req *sip.Request) string {
	switch {
	case req.CallID() == nil || req.CallID().Value() == "":
		return "missing Call-ID"
	case req.CSeq() == nil:
		return "missing CSeq"
	case req.From() == nil:
		return "missing From"
	case req.To() == nil:
		return "missing To"
	case req.Via() == nil:
		return "missing Via"
	case req.Contact() == nil:
		return "missing Contact"
	}
	return ""
}
