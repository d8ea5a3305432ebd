package sip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/rs/zerolog"
)

// allowMethods is what the server answers; REFER is only sent by us.
const allowMethods = "INVITE, ACK, BYE, CANCEL, OPTIONS, UPDATE, INFO, NOTIFY, PRACK"

// Server is the appliance's SIP endpoint: it answers the calls it
// receives and places the outbound ones (Place) from the same socket.
type Server struct {
	opts    Options
	numbers Numbers
	handler Handler
	log     zerolog.Logger
	metrics Metrics
	now     func() time.Time

	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	client *sipgo.Client

	udp     net.PacketConn
	tcp     net.Listener
	tls     net.Listener
	pubHost string
	pubPort int

	// contacts routes the INVITEs on the registrations' contacts.
	contacts contactTable

	auth     *digestAuth
	limiter  *failLimiter
	resolver *net.Resolver
	flood    *sourceGuard
	parser   *sip.Parser
	// forward picks the INVITE headers a call keeps (ForwardHeaders).
	forward headerFilter
	// floodLog is the sampled logger of refusals and bad messages.
	floodLog zerolog.Logger
	// dropped counts datagrams and connections of blocked sources;
	// malformed the messages the parser refused.
	dropped, malformed atomic.Uint64

	draining atomic.Bool
	closed   atomic.Bool

	mu    sync.Mutex
	calls map[string]*Call
	// callSources counts the calls in progress per source address, conns
	// the open stream connections.
	callSources map[netip.Addr]int
	conns       map[netip.Addr]int
	active      int
	idle        chan struct{} // closed and replaced when active drops to 0

	wg        sync.WaitGroup // request handlers in flight
	closeOnce sync.Once
	closeErr  error
}

// ServerOption customises a Server.
type ServerOption func(*Server)

// WithMetrics sets the metrics sink.
func WithMetrics(m Metrics) ServerOption { return func(s *Server) { s.metrics = m } }

// WithResolver sets the DNS resolver of the server's user agent (a
// Record-Route naming a host). Tests pass one that refuses every lookup,
// so that nothing a message says makes the process query the network.
func WithResolver(r *net.Resolver) ServerOption { return func(s *Server) { s.resolver = r } }

// NewServer binds the listeners (UDP and TCP at opts.Addr, TLS at
// opts.TLSAddr when a certificate is configured) and prepares the server;
// Serve starts answering.
func NewServer(opts Options, numbers Numbers, handler Handler, log zerolog.Logger, options ...ServerOption) (*Server, error) {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, numbers: numbers, handler: handler, log: log, metrics: noMetrics{}, now: time.Now, calls: map[string]*Call{}, callSources: map[netip.Addr]int{}, conns: map[netip.Addr]int{}, idle: make(chan struct{})}
	s.forward, _ = newHeaderFilter(opts.ForwardHeaders) // checked by validate
	for _, o := range options {
		o(s)
	}
	if err := s.listen(); err != nil {
		s.closeListeners()
		return nil, err
	}
	if err := s.setPublic(); err != nil {
		s.closeListeners()
		return nil, err
	}
	s.auth = newDigestAuth(opts.Realm, opts.DigestAlgorithms, opts.NonceTTL, s.now)
	s.limiter = newFailLimiter(opts.AuthFailLimit, opts.AuthFailWindow, s.now)
	s.flood = newSourceGuard(opts.SourceFailLimit, opts.SourceFailWindow, opts.SourceBlockTime, s.now)
	s.parser = sip.NewParser()
	s.floodLog = log.Sample(floodSampler())

	slogger := newSlogLogger(log)
	uaOpts := []sipgo.UserAgentOption{
		sipgo.WithUserAgent(opts.UserAgent),
		sipgo.WithUserAgentHostname(s.pubHost),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(slogger),
			sip.WithTransactionLayerUnhandledResponseHandler(s.onStrayResponse)),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(slogger), sip.WithTransportLayerReadFilter(s.readFilter),
			sip.WithTransportLayerTransports(sip.TransportsConfig{
				TCP: &sip.TransportTCP{DialerCreate: s.streamDialer},
				TLS: &sip.TransportTLS{TransportTCP: &sip.TransportTCP{DialerCreate: s.streamDialer}},
			})),
	}
	if s.resolver != nil {
		uaOpts = append(uaOpts, sipgo.WithUserAgentDNSResolver(s.resolver))
	}
	clientTLS, err := s.clientTLS()
	if err != nil {
		s.closeListeners()
		return nil, err
	}
	uaOpts = append(uaOpts, sipgo.WithUserAgenTLSConfig(clientTLS))
	ua, err := sipgo.NewUA(uaOpts...)
	if err != nil {
		s.closeListeners()
		return nil, fmt.Errorf("sip user agent: %w", err)
	}
	s.ua = ua
	if s.srv, err = sipgo.NewServer(ua, sipgo.WithServerLogger(slogger)); err != nil {
		s.closeListeners()
		return nil, errors.Join(fmt.Errorf("sip server: %w", err), ua.Close())
	}
	if s.client, err = sipgo.NewClient(ua, sipgo.WithClientLogger(slogger), sipgo.WithClientHostname(s.pubHost)); err != nil {
		s.closeListeners()
		return nil, errors.Join(fmt.Errorf("sip client: %w", err), ua.Close())
	}
	s.srv.OnInvite(s.guard(s.onInvite))
	s.srv.OnAck(s.guard(s.onAck))
	s.srv.OnBye(s.guard(s.inDialog("Call/Transaction Does Not Exist", (*Call).onBye)))
	s.srv.OnCancel(s.guard(s.onCancel))
	s.srv.OnOptions(s.guard(s.onOptions))
	s.srv.OnUpdate(s.guard(s.inDialog("Call/Transaction Does Not Exist", (*Call).onOffer)))
	s.srv.OnInfo(s.guard(s.inDialog("Call/Transaction Does Not Exist", (*Call).onInfo)))
	s.srv.OnNotify(s.guard(s.inDialog("Subscription Does Not Exist", (*Call).onNotify)))
	s.srv.OnPrack(s.guard(s.inDialog("Call/Transaction Does Not Exist", (*Call).onPrack)))
	s.srv.OnNoRoute(s.guard(s.onNoRoute))
	return s, nil
}

func (s *Server) setPublic() error {
	udp := s.udp.LocalAddr().(*net.UDPAddr)
	s.pubHost, s.pubPort = udp.IP.String(), udp.Port
	if s.opts.PublicAddr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(s.opts.PublicAddr)
	if err != nil {
		s.pubHost = s.opts.PublicAddr
		return nil
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("sip public addr %q: %w", s.opts.PublicAddr, err)
	}
	s.pubHost, s.pubPort = host, p
	return nil
}

func (s *Server) closeListeners() {
	if s.udp != nil {
		_ = s.udp.Close()
	}
	if s.tcp != nil {
		_ = s.tcp.Close()
	}
	if s.tls != nil {
		_ = s.tls.Close()
	}
}

// UDPAddr is the bound UDP address.
func (s *Server) UDPAddr() netip.AddrPort { return addrPort(s.udp.LocalAddr()) }

// TCPAddr is the bound TCP address.
func (s *Server) TCPAddr() netip.AddrPort { return addrPort(s.tcp.Addr()) }

// TLSAddr is the bound TLS address, or the zero value without TLS.
func (s *Server) TLSAddr() netip.AddrPort {
	if s.tls == nil {
		return netip.AddrPort{}
	}
	return addrPort(s.tls.Addr())
}

func addrPort(a net.Addr) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Serve answers SIP requests until ctx is done, then hangs up the calls
// still up (BYE with a Reason), closes the listeners and waits for its
// goroutines. It returns nil after a normal stop.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 3)
	n := 0
	serve := func(f func() error) {
		n++
		go func() { errc <- f() }()
	}
	serve(func() error { return s.srv.ServeUDP(s.udp) })
	serve(func() error { return s.srv.ServeTCP(guardedListener{s.tcp, s}) })
	if s.tls != nil {
		serve(func() error { return s.srv.ServeTLS(guardedListener{s.tls, s}) })
	}
	pruned := make(chan struct{})
	stopPrune := make(chan struct{})
	go func() {
		defer close(pruned)
		s.pruneLoop(stopPrune)
	}()
	defer func() {
		close(stopPrune)
		<-pruned
	}()
	ev := s.log.Info().Str("udp", s.UDPAddr().String()).Str("tcp", s.TCPAddr().String())
	if s.tls != nil {
		ev = ev.Str("tls", s.TLSAddr().String())
	}
	ev.Msg("sip server listening")
	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		n--
		if !errors.Is(err, net.ErrClosed) {
			serveErr = fmt.Errorf("sip serve: %w", err)
		}
	}
	s.hangupAll(ErrShutdown, "shutting down")
	err := s.Close()
	for ; n > 0; n-- {
		<-errc
	}
	return errors.Join(serveErr, err)
}

// Close stops the server without hanging up calls gracefully: listeners
// and connections are closed and in-flight handlers are waited for. It is
// idempotent; Serve calls it on return.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.mu.Lock()
		calls := make([]*Call, 0, len(s.calls))
		for _, c := range s.calls {
			calls = append(calls, c)
		}
		s.mu.Unlock()
		for _, c := range calls {
			c.end(ErrShutdown)
		}
		// Requests read before closed was set are handled on sipgo's own
		// goroutines; one that reaches its transaction after the listener
		// left the pool makes sipgo open a new socket for its answer, which
		// nothing would ever close. Give them the time to find the listener.
		time.Sleep(closeQuiesce)
		s.closeListeners()
		s.wg.Wait()
		s.closeErr = s.ua.Close()
	})
	return s.closeErr
}

// closeQuiesce is how long Close lets requests already read reach their
// transaction before the listeners close (new requests are dropped from
// the moment Close starts).
const closeQuiesce = 100 * time.Millisecond

// Drain makes the server refuse new INVITEs with 503 and Retry-After, and
// answer OPTIONS probes with 503 so that load balancers stop sending.
func (s *Server) Drain() {
	if !s.draining.Swap(true) {
		s.log.Info().Int("active_calls", s.ActiveCalls()).Msg("sip draining: refusing new calls")
	}
}

// Shutdown drains, waits until the calls in progress have ended or
// Options.DrainTimeout (or ctx) expires, then hangs up what is left with
// BYE. Serve still has to be stopped by its context.
func (s *Server) Shutdown(ctx context.Context) {
	s.Drain()
	ctx, cancel := context.WithTimeout(ctx, s.opts.DrainTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		n, idle := s.active, s.idle
		s.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-idle:
		case <-ctx.Done():
			s.log.Info().Int("active_calls", n).Msg("sip drain time over: hanging up")
			s.hangupAll(ErrShutdown, "shutting down")
			return
		}
	}
}

// ActiveCalls is the number of admitted calls not yet ended.
func (s *Server) ActiveCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// shutdownByeTimeout bounds each BYE sent to the calls still up when the
// server closes (the drain window is over): the process is exiting, so one
// retransmission on a lossy path is all it waits for.
const shutdownByeTimeout = 2 * time.Second

func (s *Server) hangupAll(cause error, text string) {
	s.mu.Lock()
	calls := make([]*Call, 0, len(s.calls))
	for _, c := range s.calls {
		calls = append(calls, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), shutdownByeTimeout)
			defer cancel()
			_ = c.hangup(ctx, cause, text)
		}()
	}
	wg.Wait()
}

func (s *Server) reserve() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active >= s.opts.MaxCalls {
		return false
	}
	s.active++
	return true
}

func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 {
		close(s.idle)
		s.idle = make(chan struct{})
	}
}

func (s *Server) register(c *Call) {
	s.mu.Lock()
	s.calls[c.key] = c
	s.callSources[c.src.Addr()]++
	s.mu.Unlock()
}

func (s *Server) unregister(c *Call) {
	s.mu.Lock()
	if _, ok := s.calls[c.key]; ok {
		delete(s.calls, c.key)
		if s.callSources[c.src.Addr()]--; s.callSources[c.src.Addr()] <= 0 {
			delete(s.callSources, c.src.Addr())
		}
	}
	s.mu.Unlock()
}

// lookup finds the dialog a request belongs to (our tag is in To).
func (s *Server) lookup(req *sip.Request) *Call {
	to, cid := req.To(), req.CallID()
	if to == nil || cid == nil {
		return nil
	}
	tag, _ := to.Params.Get("tag")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[dialogKey(cid.Value(), tag)]
}

// guard tracks handlers so Close can wait for them, refuses work once
// closed, refuses a request that fails checkRequest (stream transports
// reach here unchecked; UDP was checked by the gate), and contains a
// panic to the request that caused it: it is logged with its stack and
// answered 500, and every other call goes on.
func (s *Server) guard(h sipgo.RequestHandler) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		s.wg.Add(1)
		defer s.wg.Done()
		defer func() {
			if v := recover(); v != nil {
				s.log.Error().Interface("panic", v).Str("method", string(req.Method)).Str("src", req.Source()).
					Str("stack", string(debug.Stack())).Msg("sip handler panicked: request refused")
				if !req.IsAck() {
					s.respond(req, tx, 500, "Server Internal Error", nil)
				}
			}
		}()
		if s.closed.Load() {
			if !req.IsAck() {
				s.respond(req, tx, 503, "Service Unavailable", nil, s.retryAfter())
			}
			return
		}
		if r := checkRequest(req); r != nil {
			if req.IsAck() {
				s.sourceFailed(sourceAddr(req), string(req.Method), r.status, r.reason)
				return
			}
			s.refuse(req, tx, r.status, r.reason, r.headers...)
			return
		}
		h(req, tx)
	}
}

func (s *Server) retryAfter() sip.Header {
	return sip.NewHeader("Retry-After", strconv.Itoa(int(s.opts.RetryAfter/time.Second)))
}

// respond sends a response outside any call (no dialog tag handling).
func (s *Server) respond(req *sip.Request, tx sip.ServerTransaction, status int, reason string, body []byte, headers ...sip.Header) {
	res := sip.NewResponseFromRequest(req, status, reason, body)
	symmetric(req, res)
	res.AppendHeader(sip.NewHeader("Server", s.opts.UserAgent))
	for _, h := range headers {
		res.AppendHeader(h)
	}
	if s.tooBigForUDP(req, res) {
		return
	}
	if err := tx.Respond(res); err != nil {
		s.log.Debug().Err(err).Int("status", status).Str("method", string(req.Method)).Msg("sip respond failed")
	}
}

// tooBigForUDP sends over UDP, itself, a response bigger than sipgo
// writes (MTU - 200 bytes: a long request's Vias and headers come back in
// its answer, RFC 4475 longreq); the datagram is fragmented by IP.
// It reports whether it did.
func (s *Server) tooBigForUDP(req *sip.Request, res *sip.Response) bool {
	if !strings.EqualFold(req.Transport(), "UDP") {
		return false
	}
	b := res.String()
	if len(b) <= sip.UDPMTUSize-200 {
		return false
	}
	if dst, err := netip.ParseAddrPort(req.Source()); err == nil {
		s.writeUDP([]byte(b), netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port()))
	}
	return true
}

// symmetric sends a UDP response back to the address and port the
// request came from (RFC 3581 section 4 applied whether or not the Via
// asked for rport): it reaches callers behind NAT, and never goes to a
// port that a request only named.
func symmetric(req *sip.Request, res *sip.Response) {
	res.SipVersion = "SIP/2.0"
	stripSyntheticBranch(res)
	if strings.EqualFold(req.Transport(), "UDP") && req.Source() != "" {
		res.SetDestination(req.Source())
	}
}

func (s *Server) allowHeaders() []sip.Header {
	return []sip.Header{
		sip.NewHeader("Allow", allowMethods),
		sip.NewHeader("Accept", "application/sdp"),
		supportedHeader(),
	}
}

func (s *Server) onOptions(req *sip.Request, tx sip.ServerTransaction) {
	if s.draining.Load() && s.lookup(req) == nil {
		s.respond(req, tx, 503, "Service Unavailable", nil, append(s.allowHeaders(), s.retryAfter())...)
		return
	}
	s.respond(req, tx, 200, "OK", nil, s.allowHeaders()...)
}

// knownMethods are the SIP methods of the RFCs this server does not take;
// they get 405 with Allow (RFC 3261 section 8.2.1), any other method 501
// (section 21.5.2: a method the server does not recognise).
var knownMethods = map[sip.RequestMethod]bool{sip.REGISTER: true, sip.SUBSCRIBE: true, sip.PUBLISH: true, sip.MESSAGE: true, sip.REFER: true}

func (s *Server) onNoRoute(req *sip.Request, tx sip.ServerTransaction) {
	if knownMethods[req.Method] {
		s.refuse(req, tx, 405, "Method Not Allowed", sip.NewHeader("Allow", allowMethods))
		return
	}
	s.refuse(req, tx, 501, "Not Implemented", sip.NewHeader("Allow", allowMethods))
}

func (s *Server) onCancel(req *sip.Request, tx sip.ServerTransaction) {
	// CANCELs matching a pending INVITE are answered by the transaction
	// layer (200, then 487 to the INVITE); this one matched nothing.
	s.refuse(req, tx, 481, "Call/Transaction Does Not Exist")
}

func (s *Server) onAck(req *sip.Request, tx sip.ServerTransaction) {
	if c := s.lookup(req); c != nil {
		c.ackReceived(req)
	}
}

// inDialog routes an in-dialog request to its call's handler, or answers
// 481 (with reason) when no call has the dialog.
func (s *Server) inDialog(reason string, handle func(*Call, *sip.Request, sip.ServerTransaction)) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		c := s.lookup(req)
		if c == nil {
			s.refuse(req, tx, 481, reason)
			return
		}
		handle(c, req, tx)
	}
}

// contactFor is our Contact for a transport.
func (s *Server) contactFor(transport string) sip.ContactHeader {
	port := s.pubPort
	uri := sip.Uri{Scheme: "sip", Host: s.pubHost, Port: port}
	switch strings.ToLower(transport) {
	case "tcp":
		if s.opts.PublicAddr == "" {
			uri.Port = int(s.TCPAddr().Port())
		}
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", "tcp")
	case "tls":
		uri.Port = int(s.TLSAddr().Port())
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", "tls")
	}
	return sip.ContactHeader{Address: uri}
}
