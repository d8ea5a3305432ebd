package sip

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/google/uuid"
)

// Errors of placed calls.
var (
	// ErrOverloaded means the server holds sip.max_calls calls already.
	ErrOverloaded = errors.New("sip: at the maximum number of calls")
	// ErrRingTimeout is the cause of a placed call cancelled because
	// nobody answered within its ring timeout.
	ErrRingTimeout = errors.New("sip: no answer within the ring timeout")
	// ErrTLSUnavailable means a call over TLS was asked of a server
	// without its own TLS listener: the callee's requests in the dialog
	// come back to our Contact, over TLS.
	ErrTLSUnavailable = errors.New("sip: calls over TLS need the appliance's SIP TLS listener (sip.tls_cert and sip.tls_key)")
	// ErrSRTPUnavailable means the call must be on SRTP (the number's
	// srtp, or rtp.srtp) but its keys could not travel: SDES keys go
	// only over TLS (unless rtp.srtp_signalling is any).
	ErrSRTPUnavailable = errors.New("sip: srtp is required and SDES keys travel only over SIP TLS: use a sips: or ;transport=tls URI")
)

// PlaceRequest describes a call the server places (an outbound call).
type PlaceRequest struct {
	// Target is the Request-URI: the callee, sip:user@host[:port] with an
	// optional transport parameter (TrunkTarget builds it for a number
	// called through a carrier's trunk).
	Target string
	// From is the user part of the From URI: the caller id.
	From string
	// AuthUsername and AuthPassword answer one 401/407 digest challenge
	// of the INVITE (SHA-256 preferred over MD5).
	AuthUsername, AuthPassword string
	// Codecs are offered in this order: names among CodecNames (the
	// number's codecs; default Opus, G722, PCMU, PCMA). The callee's
	// answer chooses, and with it the call's audio rate.
	Codecs []string
	// RingTimeout cancels the INVITE (CANCEL, then the 487) when no final
	// response came within it; 0: only ctx and hangup cancel it.
	RingTimeout time.Duration
	// Route is carried with the call (Route); this package reads its SRTP
	// policy only.
	Route *Route
	// Headers are added to the INVITE (checked by CheckHeaders).
	Headers []Header
}

// DialError says why a placed call was not answered: the INVITE's final
// response (Status > 0), or Err (ErrRingTimeout after our CANCEL, the
// cause of a call ended while it rang, a transport failure).
type DialError struct {
	Status int
	Reason string
	Err    error
}

// Error says how the dial ended.
func (e *DialError) Error() string {
	switch {
	case e.Status > 0 && e.Err != nil:
		return fmt.Sprintf("sip: invite answered %d %s: %v", e.Status, e.Reason, e.Err)
	case e.Status > 0:
		return fmt.Sprintf("sip: invite answered %d %s", e.Status, e.Reason)
	case e.Err != nil:
		return "sip: invite: " + e.Err.Error()
	}
	return "sip: invite failed"
}

// Unwrap is the cause (nil for a refusal).
func (e *DialError) Unwrap() error { return e.Err }

// placement is what a placed call keeps of its dial (Call.placed).
type placement struct {
	req PlaceRequest
	// crypto is the SDES of our offer (nil: plain RTP).
	crypto *offerCrypto
	// provisionals gets the status of each provisional response but 100.
	provisionals chan int

	mu     sync.Mutex
	cancel context.CancelCauseFunc // ends the dial (hangup before answer)
	uac    *inviteClient           // the INVITE, once it went out
}

// cancelCause ends a dial with the Reason its CANCEL carries (RFC 3326
// allows one in a CANCEL): the hangup's, when it gave one.
type cancelCause struct {
	err    error
	reason []sip.Header
}

func (c *cancelCause) Error() string { return c.err.Error() }
func (c *cancelCause) Unwrap() error { return c.err }

// cancelHeaders is what the CANCEL of a dial that ctx ended carries: the
// Reason a hangup gave, or nothing.
func cancelHeaders(ctx context.Context) []sip.Header {
	var cc *cancelCause
	if errors.As(context.Cause(ctx), &cc) {
		return cc.reason
	}
	return nil
}

// stop ends the dial; the Reason among headers, if any, goes with its
// CANCEL.
func (p *placement) stop(cause error, headers ...Header) {
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Reason") {
			cause = &cancelCause{err: cause, reason: sipHeaders([]Header{h})}
			break
		}
	}
	p.mu.Lock()
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// Place prepares a call to r.Target: it is counted against max_calls and
// registered, so the callee's requests in the dialog (BYE, re-INVITE,
// INFO, NOTIFY) reach it, and they arrive on the server's own socket, to
// its Contact. The INVITE goes out when Answer is called with our RTP
// address (its SDP offer), so a media leg drives a placed call the way it
// answers a received one: Answer returns once the callee answered (a
// *DialError when it did not). Ringing and Reject before Answer only end
// it. ErrShutdown while draining, ErrOverloaded at max_calls.
func (s *Server) Place(ctx context.Context, r PlaceRequest) (*Call, error) {
	if s.closed.Load() || s.draining.Load() {
		return nil, ErrShutdown
	}
	target, err := parseURI(r.Target)
	if err != nil || target.User == "" {
		return nil, fmt.Errorf("place %q: %w", r.Target, errors.Join(errTargetURI, err))
	}
	transport := "UDP"
	if tr, ok := target.UriParams.Get("transport"); ok {
		transport = strings.ToUpper(tr)
	}
	if strings.EqualFold(target.Scheme, "sips") {
		// RFC 3261 section 26.2: TLS to the first hop (parseURI refuses
		// another transport with sips:).
		transport = "TLS"
	}
	if transport == "TLS" {
		if s.tls == nil {
			return nil, fmt.Errorf("place %q: %w", r.Target, ErrTLSUnavailable)
		}
		if target.Port == 0 {
			target.Port = 5061
		}
	}
	if r.Route == nil {
		r.Route = &Route{}
	}
	sec, err := placeCrypto(s.srtpRules(transport, r.Route))
	if err != nil {
		return nil, fmt.Errorf("place %q: %w: %w", r.Target, ErrSRTPUnavailable, err)
	}
	dst, err := s.resolveTarget(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("place %q: %w", r.Target, err)
	}
	codecs, err := offerCodecs(r.Codecs)
	if err != nil {
		return nil, fmt.Errorf("place %q: %w", r.Target, err)
	}
	if !s.reserve() {
		return nil, ErrOverloaded
	}
	params := delayedOfferParams(codecs)
	id, callID := uuid.NewString(), uuid.NewString()
	c := &Call{
		srv: s, id: id, route: r.Route, src: dst,
		log:     s.log.With().Str("call_id", id).Str("sip_call_id", callID).Str("direction", "outbound").Logger(),
		acks:    make(chan *sip.Request, 4),
		updates: make(chan MediaParams, 4),
		infos:   make(chan Info, 64),
		initial: params, params: params,
		sdp:       newLocalSDP(uint64(time.Now().Unix())),
		delayed:   true, // our offer, their answer
		offered:   codecs,
		finalSent: make(chan struct{}),
		refreshes: make(chan struct{}, 1),
		received:  s.now(),
		placed:    &placement{req: r, crypto: sec, provisionals: make(chan int, 8)},
	}
	c.dlg = &dialog{
		client: s.client, callID: callID,
		local:     sip.Uri{Scheme: "sip", User: r.From, Host: s.pubHost},
		localTag:  sip.GenerateTagN(16),
		remote:    sip.Uri{Scheme: target.Scheme, User: target.User, Host: target.Host, Port: target.Port},
		contact:   s.contactFor(transport),
		transport: transport,
		peer:      dst.String(),
		target:    target,
		cseq:      uint32(rand.IntN(1 << 15)),
	}
	if transport == "TLS" {
		// By name, so that the peer's certificate is checked against it.
		c.dlg.peer = hostPort(target)
	}
	if transport == "UDP" {
		// Requests leave from the server's socket, so that the callee's
		// answers and in-dialog requests come back to it.
		la := s.UDPAddr()
		c.dlg.laddr = &sip.Addr{IP: la.Addr().AsSlice(), Port: int(la.Port()), Hostname: la.Addr().String()}
	}
	c.invite = c.dlg.newRequest(sip.INVITE, nil)
	c.key = dialogKey(callID, c.dlg.localTag)
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	s.register(c)
	c.log.Info().Str("target", r.Target).Msg("placing call")
	return c, nil
}

// resolveTarget is the address of a target's host (an IP address, or
// the first address of its name) and port (5060 by default).
func (s *Server) resolveTarget(ctx context.Context, u sip.Uri) (netip.AddrPort, error) {
	host, port, _ := net.SplitHostPort(hostPort(u))
	if a, err := netip.ParseAddr(host); err == nil {
		p, _ := netip.ParseAddrPort(net.JoinHostPort(a.Unmap().String(), port))
		return p, nil
	}
	r := s.resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("resolve %s: %w", host, errors.Join(errTargetURI, err))
	}
	return netip.ParseAddrPort(net.JoinHostPort(addrs[0].Unmap().String(), port))
}

// Outbound reports whether the server placed this call (Place).
func (c *Call) Outbound() bool { return c.placed != nil }

// Provisionals delivers the status of each provisional response (180,
// 183, …) to a placed call's INVITE while it dials; nil for a received
// call. A reader that falls behind misses some: the callee rings anyway.
func (c *Call) Provisionals() <-chan int {
	if c.placed == nil {
		return nil
	}
	return c.placed.provisionals
}

// dial sends the INVITE of a placed call with our offer at local and
// follows it to its final response (inviteClient: one digest challenge
// answered, CANCEL on the ring timeout or a hangup, the 2xx ACKed and its
// SDP answer taken). It returns nil once the call is answered, else a
// *DialError (the call has then ended).
func (c *Call) dial(ctx context.Context, local netip.AddrPort) error {
	p := c.placed
	c.mu.Lock()
	if c.state != stateEarly {
		c.mu.Unlock()
		return fmt.Errorf("dial: %w", c.stateErr())
	}
	if ip := c.srv.opts.RTPPublicIP; ip.IsValid() {
		local = netip.AddrPortFrom(ip, local.Port())
	}
	c.local = local
	offer, err := c.sdp.offer(local, c.offered, delayedOfferDTMF, defaultPtime, SendRecv, p.crypto)
	c.mu.Unlock()
	if err != nil {
		c.end(err)
		return &DialError{Err: err}
	}
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.mu.Lock()
	p.cancel = cancel
	p.mu.Unlock()
	stop := context.AfterFunc(c.ctx, func() { cancel(context.Cause(c.ctx)) })
	defer stop()
	if d := p.req.RingTimeout; d > 0 {
		t := time.AfterFunc(d, func() { cancel(ErrRingTimeout) })
		defer t.Stop()
	}
	headers := append([]sip.Header{sip.NewHeader("Allow", allowMethods), supportedHeader(), sip.NewHeader("User-Agent", c.srv.opts.UserAgent)},
		sipHeaders(p.req.Headers)...)
	var answer *sip.Response
	u := &inviteClient{
		client: c.srv.client, dlg: c.dlg, offer: offer, codecs: c.offered, crypto: p.crypto,
		sessionExpires: max(c.srv.opts.SessionExpires, c.srv.opts.MinSE), minSE: c.srv.opts.MinSE,
		headers: headers,
		user:    p.req.AuthUsername, password: p.req.AuthPassword,
		requestTimeout: c.srv.opts.RequestTimeout,
		on: uacHooks{provisional: func(res *sip.Response) {
			select {
			case p.provisionals <- res.StatusCode:
			default:
			}
		}, answered: func(res *sip.Response) { answer = res }},
	}
	p.mu.Lock()
	p.uac = u
	p.mu.Unlock()
	params, err := u.run(dctx)
	if err != nil {
		c.end(fmt.Errorf("%w: %w", ErrRejected, err))
		ev := c.log.Info()
		if de := (*DialError)(nil); errors.As(err, &de) {
			ev = ev.Int("status", de.Status).AnErr("cause", de.Err)
		}
		ev.Msg("placed call not answered")
		return err
	}
	c.setAnswered(params)
	c.mu.Lock()
	if c.state == stateEarly {
		c.state = stateConfirmed
	}
	c.mu.Unlock()
	c.finalResponse()
	// The session timer the 2xx settled (RFC 4028 section 7.2), kept
	// as for a call we answered.
	c.peerUpdates = listsTag(answer, string(sip.UPDATE), "Allow")
	t := placedTimer(answer, u.sessionExpires)
	c.timer.Store(t)
	go c.runSessionTimer()
	c.log.Info().Str("media", params.String()).Dur("session_expires", t.interval).Bool("we_refresh", t.uasRefreshes).Msg("placed call answered")
	return nil
}

// onStrayResponse re-sends the ACK of a placed call's 2xx when the 2xx
// is retransmitted (our ACK was lost): RFC 3261 section 13.2.2.4.
func (s *Server) onStrayResponse(res *sip.Response) {
	if !res.IsSuccess() || res.CSeq() == nil || res.CSeq().MethodName != sip.INVITE || res.From() == nil || res.CallID() == nil {
		return
	}
	tag, _ := res.From().Params.Get("tag")
	s.mu.Lock()
	c := s.calls[dialogKey(res.CallID().Value(), tag)]
	s.mu.Unlock()
	if c == nil || c.placed == nil {
		return
	}
	c.placed.mu.Lock()
	u := c.placed.uac
	c.placed.mu.Unlock()
	if u != nil {
		u.reack()
	}
}
