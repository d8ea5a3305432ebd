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
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/google/uuid"
	"github.com/icholy/digest"
	"github.com/rs/zerolog"
)

// Dialer timings.
const (
	// transportReadyTimeout bounds the wait for sipgo to register the
	// dialer's UDP socket, which takes microseconds once ServeUDP ran.
	transportReadyTimeout = 2 * time.Second
	// cancelTimeout bounds a CANCEL transaction: the peer answers 200 at
	// once (RFC 3261 §9.2), so 5 s covers retransmissions on a lossy path.
	cancelTimeout = 5 * time.Second
)

// DialerOptions configures a Dialer.
type DialerOptions struct {
	// LocalAddr is the local SIP address for UDP ("127.0.0.1:0" by
	// default); requests leave from it and in-dialog requests arrive on it.
	LocalAddr string
	// UserAgent is the User-Agent header. Default "switchboard".
	UserAgent string
}

// Dialer places outbound calls (the UAC side used by `switchboard dial`
// and by tests). One Dialer can hold several calls.
type Dialer struct {
	log    zerolog.Logger
	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	client *sipgo.Client
	udp    net.PacketConn
	name   string

	mu    sync.Mutex
	calls map[string]*OutboundCall

	serveDone chan struct{}
	closeOnce sync.Once
	closing   atomic.Bool
	closeErr  error
}

// NewDialer binds the local UDP socket and starts reading it.
func NewDialer(opts DialerOptions, log zerolog.Logger) (*Dialer, error) {
	if opts.LocalAddr == "" {
		opts.LocalAddr = "127.0.0.1:0"
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	udp, err := net.ListenPacket("udp", opts.LocalAddr)
	if err != nil {
		return nil, fmt.Errorf("dialer listen %s: %w", opts.LocalAddr, err)
	}
	laddr := udp.LocalAddr().String()
	host, _, _ := net.SplitHostPort(laddr)
	slogger := newSlogLogger(log)
	d := &Dialer{log: log, udp: udp, name: opts.UserAgent, calls: map[string]*OutboundCall{}, serveDone: make(chan struct{})}
	d.ua, err = sipgo.NewUA(
		sipgo.WithUserAgent(opts.UserAgent),
		sipgo.WithUserAgentHostname(host),
		sipgo.WithUserAgentTransactionLayerOptions(
			sip.WithTransactionLayerLogger(slogger),
			sip.WithTransactionLayerUnhandledResponseHandler(d.onStrayResponse),
		),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(slogger)),
	)
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("dialer user agent: %w", err)
	}
	if d.srv, err = sipgo.NewServer(d.ua, sipgo.WithServerLogger(slogger)); err != nil {
		_ = udp.Close()
		return nil, errors.Join(err, d.ua.Close())
	}
	if d.client, err = sipgo.NewClient(d.ua, sipgo.WithClientLogger(slogger), sipgo.WithClientHostname(host)); err != nil {
		_ = udp.Close()
		return nil, errors.Join(err, d.ua.Close())
	}
	d.srv.OnBye(d.onBye)
	d.srv.OnInfo(d.onInDialog(200))
	d.srv.OnRefer(d.onRefer)
	d.srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
	})
	d.srv.OnAck(func(*sip.Request, sip.ServerTransaction) {})
	d.srv.OnNoRoute(func(req *sip.Request, tx sip.ServerTransaction) {
		res := sip.NewResponseFromRequest(req, 405, "Method Not Allowed", nil)
		res.AppendHeader(sip.NewHeader("Allow", "ACK, BYE, INFO, OPTIONS, REFER"))
		_ = tx.Respond(res)
	})
	go func() {
		defer close(d.serveDone)
		_ = d.srv.ServeUDP(tapConn{PacketConn: udp, d: d})
	}()
	// Requests must leave from this socket (dialog.laddr), which sipgo
	// finds in its pool once ServeUDP registered it: wait for that.
	tl := d.ua.TransportLayer()
	for deadline := time.Now().Add(transportReadyTimeout); ; time.Sleep(time.Millisecond) {
		if c, err := tl.GetConnection("udp", laddr); err == nil && c != nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("dialer: the UDP listener did not start"), d.Close())
		}
	}
	return d, nil
}

// LocalAddr is the bound UDP address.
func (d *Dialer) LocalAddr() netip.AddrPort { return addrPort(d.udp.LocalAddr()) }

// Close hangs up nothing: it ends every call's context, closes the socket
// and waits for the reader. Idempotent.
func (d *Dialer) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		calls := make([]*OutboundCall, 0, len(d.calls))
		for _, c := range d.calls {
			calls = append(calls, c)
		}
		d.mu.Unlock()
		for _, c := range calls {
			c.end(ErrShutdown)
		}
		d.closing.Store(true) // the tap drops new requests (see Server.Close)
		time.Sleep(closeQuiesce)
		err := d.udp.Close()
		<-d.serveDone
		d.closeErr = errors.Join(d.ua.Close(), ignoreClosed(err))
	})
	return d.closeErr
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Event is one step of an outbound call's timeline.
type Event struct {
	Time time.Time
	// Kind is one of "invite_sent", "provisional", "challenge", "answered",
	// "ack_sent", "failed", "cancel_sent", "bye_sent", "bye_received",
	// "info_sent".
	Kind   string
	Status int
	Reason string
	Detail string
}

// DialRequest describes one outbound call.
type DialRequest struct {
	// Target is the host:port (or sip: URI) of the server.
	Target string
	// Transport is "udp" (default) or "tcp".
	Transport string
	// To is the called number (Request-URI user).
	To string
	// From is the calling user. Default "switchboard".
	From string
	// User and Password answer 401/407 digest challenges (MD5, SHA-256).
	User, Password string
	// RTPAddr is the local media address put in the offer.
	RTPAddr netip.AddrPort
	// Codecs are offered in this order. Default PCMU, PCMA.
	Codecs []Codec
	// DTMFPayloadType for telephone-event; default 101, -1 for none.
	DTMFPayloadType int
	// Ptime is offered as a=ptime. Default 20 ms.
	Ptime time.Duration
	// Headers are added to the INVITE (e.g. X-* headers).
	Headers []Header
	// OnEvent receives the timeline; called from the dialer's goroutines.
	OnEvent func(Event)
	// OnRefer, when set, accepts a REFER from the server (202) and returns
	// the final status of the simulated transfer, reported back in a
	// NOTIFY message/sipfrag. Without it REFER is declined with 603.
	OnRefer func(referTo string) int
}

// OutboundCall is an answered outbound call.
type OutboundCall struct {
	d       *Dialer
	dlg     *dialog
	media   MediaParams
	onEvent func(Event)
	onRefer func(string) int
	ack     *sip.Request
	log     zerolog.Logger

	ctx     context.Context
	cancel  context.CancelCauseFunc
	endOnce sync.Once
	infos   chan Info
}

// Dial sends INVITE with an SDP offer, follows provisional responses,
// answers one digest challenge, sends ACK for the 2xx and returns the
// answered call. Cancelling ctx before the answer sends CANCEL. A final
// error response is returned as *StatusError.
func (d *Dialer) Dial(ctx context.Context, r DialRequest) (*OutboundCall, error) {
	emit := func(e Event) {
		e.Time = time.Now()
		if r.OnEvent != nil {
			r.OnEvent(e)
		}
	}
	if r.Transport == "" {
		r.Transport = "udp"
	}
	if r.From == "" {
		r.From = d.name
	}
	if len(r.Codecs) == 0 {
		r.Codecs = []Codec{PCMU, PCMA}
	}
	if r.DTMFPayloadType == 0 {
		r.DTMFPayloadType = 101
	}
	if r.Ptime == 0 {
		r.Ptime = defaultPtime
	}
	var target sip.Uri
	t := r.Target
	if !strings.HasPrefix(t, "sip:") && !strings.HasPrefix(t, "sips:") {
		t = "sip:" + r.To + "@" + t
	}
	if err := sip.ParseUri(t, &target); err != nil {
		return nil, fmt.Errorf("dial: target %q: %w", r.Target, err)
	}
	if target.User == "" {
		target.User = r.To
	}
	transport := strings.ToUpper(r.Transport)
	local := d.LocalAddr()
	sdpState := newLocalSDP(uint64(time.Now().Unix()))
	dtmf := uint8(0)
	if r.DTMFPayloadType > 0 {
		dtmf = uint8(r.DTMFPayloadType)
	}
	offer, err := sdpState.offer(r.RTPAddr, r.Codecs, dtmf, r.Ptime, SendRecv)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	dlg := &dialog{
		client: d.client, callID: uuid.NewString(),
		local:     sip.Uri{Scheme: "sip", User: r.From, Host: local.Addr().String()},
		localTag:  sip.GenerateTagN(16),
		remote:    sip.Uri{Scheme: "sip", User: target.User, Host: target.Host, Port: target.Port},
		contact:   sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: r.From, Host: local.Addr().String(), Port: int(local.Port())}},
		transport: transport,
		peer:      target.HostPort(),
		target:    target,
		cseq:      uint32(rand.IntN(1 << 15)),
	}
	if transport == "UDP" {
		la := d.LocalAddr()
		dlg.laddr = &sip.Addr{IP: la.Addr().AsSlice(), Port: int(la.Port()), Hostname: la.Addr().String()}
	}
	if transport == "TCP" {
		dlg.contact.Address.UriParams = sip.NewParams()
		dlg.contact.Address.UriParams.Add("transport", "tcp")
	}
	c := &OutboundCall{d: d, dlg: dlg, onEvent: r.OnEvent, onRefer: r.OnRefer, infos: make(chan Info, 32), log: d.log.With().Str("sip_call_id", dlg.callID).Logger()}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	d.mu.Lock()
	d.calls[dialogKey(dlg.callID, dlg.localTag)] = c
	d.mu.Unlock()
	fail := func(err error) (*OutboundCall, error) {
		emit(Event{Kind: "failed", Detail: err.Error()})
		c.end(err)
		return nil, fmt.Errorf("dial: %w", err)
	}

	var extra []sip.Header
	for _, h := range r.Headers {
		extra = append(extra, sip.NewHeader(h.Name, h.Value))
	}
	authTried := false
	for {
		invite := dlg.newRequest(sip.INVITE, offer, append(extra, sip.NewHeader("Content-Type", "application/sdp"), sip.NewHeader("User-Agent", d.name))...)
		invite.Recipient = target
		// Reported before sending: the answer may arrive before
		// TransactionRequest returns.
		emit(Event{Kind: "invite_sent", Detail: target.String()})
		tx, err := d.client.TransactionRequest(ctx, invite, sipgo.ClientRequestAddVia)
		if err != nil {
			return fail(err)
		}
		res, err := c.waitFinal(ctx, tx, invite, emit)
		tx.Terminate()
		if err != nil {
			return fail(err)
		}
		if (res.StatusCode == 401 || res.StatusCode == 407) && !authTried && r.User != "" {
			authTried = true
			h, err := authorization(res, invite, r.User, r.Password)
			if err != nil {
				return fail(err)
			}
			emit(Event{Kind: "challenge", Status: res.StatusCode, Reason: res.Reason})
			extra = append(extra, h)
			continue
		}
		if !res.IsSuccess() {
			return fail(&StatusError{Method: "INVITE", Status: res.StatusCode, Reason: res.Reason})
		}
		return c.confirm(invite, res, r.Codecs, emit)
	}
}

// waitFinal follows the INVITE transaction to its final response; a
// cancelled ctx sends CANCEL and waits (briefly) for the 487.
func (c *OutboundCall) waitFinal(ctx context.Context, tx sip.ClientTransaction, invite *sip.Request, emit func(Event)) (*sip.Response, error) {
	res, canceled, err := awaitFinal(ctx, c.d.client, tx, invite, func(res *sip.Response) {
		if c.dlg.laddr == nil { // over UDP the socket tap reports them in order
			emit(Event{Kind: "provisional", Status: res.StatusCode, Reason: res.Reason})
		}
	}, func() { emit(Event{Kind: "cancel_sent"}) })
	if err != nil {
		return nil, err
	}
	if canceled && !res.IsSuccess() {
		return nil, context.Cause(ctx)
	}
	return res, nil
}

// authorization answers a digest challenge (SHA-256 preferred over MD5).
func authorization(res *sip.Response, req *sip.Request, user, password string) (sip.Header, error) {
	name, credName := "WWW-Authenticate", "Authorization"
	if res.StatusCode == 407 {
		name, credName = "Proxy-Authenticate", "Proxy-Authorization"
	}
	var best *digest.Challenge
	for _, h := range res.GetHeaders(name) {
		ch, err := digest.ParseChallenge(h.Value())
		if err != nil || !digest.CanDigest(ch) {
			continue
		}
		alg := strings.ToUpper(ch.Algorithm)
		if alg != "MD5" && alg != "SHA-256" && alg != "" {
			continue
		}
		if best == nil || alg == "SHA-256" {
			best = ch
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no usable digest challenge in %d", res.StatusCode)
	}
	cred, err := digest.Digest(best, digest.Options{Method: string(req.Method), URI: req.Recipient.String(), Username: user, Password: password})
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	return sip.NewHeader(credName, cred.String()), nil
}

// confirm builds the dialog from the 2xx, sends ACK and reads the answer.
func (c *OutboundCall) confirm(invite *sip.Request, res *sip.Response, offered []Codec, emit func(Event)) (*OutboundCall, error) {
	tag, _ := res.To().Params.Get("tag")
	c.dlg.remoteTag = tag
	c.dlg.setTarget(res.Contact())
	rr := res.GetHeaders("Record-Route")
	for i := len(rr) - 1; i >= 0; i-- {
		var u sip.Uri
		if err := sip.ParseUri(strings.Trim(strings.TrimSpace(rr[i].Value()), "<>"), &u); err == nil {
			c.dlg.routeSet = append(c.dlg.routeSet, u)
		}
	}
	c.dlg.mu.Lock()
	c.dlg.cseq-- // ACK reuses the INVITE's CSeq
	c.dlg.mu.Unlock()
	ack := c.dlg.newRequest(sip.ACK, nil)
	ack.CSeq().SeqNo = invite.CSeq().SeqNo
	c.ack = ack
	if err := c.d.client.WriteRequest(ack, sipgo.ClientRequestAddVia); err != nil {
		c.end(err)
		return nil, fmt.Errorf("dial: ack: %w", err)
	}
	emit(Event{Kind: "answered", Status: res.StatusCode, Reason: res.Reason})
	emit(Event{Kind: "ack_sent"})
	media, err := answerMatch(res.Body(), offered)
	if err != nil {
		_ = c.Hangup(context.Background(), "bad answer")
		return nil, fmt.Errorf("dial: answer sdp: %w", err)
	}
	c.media = media
	return c, nil
}

// onStrayResponse re-sends the ACK for retransmitted 2xx responses.
func (d *Dialer) onStrayResponse(res *sip.Response) {
	if !res.IsSuccess() || res.CSeq() == nil || res.CSeq().MethodName != sip.INVITE {
		return
	}
	from := res.From()
	if from == nil || res.CallID() == nil {
		return
	}
	tag, _ := from.Params.Get("tag")
	d.mu.Lock()
	c := d.calls[dialogKey(res.CallID().Value(), tag)]
	d.mu.Unlock()
	if c != nil && c.ack != nil {
		_ = d.client.WriteRequest(c.ack.Clone(), func(*sipgo.Client, *sip.Request) error { return nil })
	}
}

func (d *Dialer) lookup(req *sip.Request) *OutboundCall {
	to, cid := req.To(), req.CallID()
	if to == nil || cid == nil {
		return nil
	}
	tag, _ := to.Params.Get("tag")
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[dialogKey(cid.Value(), tag)]
}

func (d *Dialer) onBye(req *sip.Request, tx sip.ServerTransaction) {
	c := d.lookup(req)
	if c == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
	detail := ""
	if h := req.GetHeader("Reason"); h != nil {
		detail = h.Value()
	}
	c.emit(Event{Kind: "bye_received", Detail: detail})
	c.end(ErrRemoteBye)
}

func (d *Dialer) onInDialog(status int) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		c := d.lookup(req)
		if c == nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
			return
		}
		_ = tx.Respond(sip.NewResponseFromRequest(req, status, "OK", nil))
		info := Info{Body: append([]byte(nil), req.Body()...)}
		if ct := req.ContentType(); ct != nil {
			info.ContentType = ct.Value()
		}
		select {
		case c.infos <- info:
		default:
		}
	}
}

func (c *OutboundCall) emit(e Event) {
	e.Time = time.Now()
	if c.onEvent != nil {
		c.onEvent(e)
	}
}

func (c *OutboundCall) end(cause error) {
	c.endOnce.Do(func() {
		c.cancel(cause)
		c.d.mu.Lock()
		delete(c.d.calls, dialogKey(c.dlg.callID, c.dlg.localTag))
		c.d.mu.Unlock()
	})
}

// Media is the answered remote media.
func (c *OutboundCall) Media() MediaParams { return c.media }

// SIPCallID is the Call-ID of the call.
func (c *OutboundCall) SIPCallID() string { return c.dlg.callID }

// Context ends when the call ends; context.Cause tells why.
func (c *OutboundCall) Context() context.Context { return c.ctx }

// Infos delivers INFO requests received from the server.
func (c *OutboundCall) Infos() <-chan Info { return c.infos }

// Hangup sends BYE with a Reason header.
func (c *OutboundCall) Hangup(ctx context.Context, reason string) error {
	if c.ctx.Err() != nil {
		return nil
	}
	c.end(ErrLocalHangup)
	bye := c.dlg.newRequest(sip.BYE, nil, reasonHeader("SIP", 200, reason))
	c.emit(Event{Kind: "bye_sent", Detail: reason})
	res, err := c.dlg.do(ctx, bye)
	if err != nil {
		return fmt.Errorf("hangup: %w", err)
	}
	return statusErr(bye, res)
}

// SendInfo sends an INFO request in the dialog (e.g. application/dtmf-relay).
func (c *OutboundCall) SendInfo(ctx context.Context, contentType string, body []byte) error {
	req := c.dlg.newRequest(sip.INFO, body, sip.NewHeader("Content-Type", contentType))
	c.emit(Event{Kind: "info_sent", Detail: contentType})
	res, err := c.dlg.do(ctx, req)
	if err != nil {
		return fmt.Errorf("info: %w", err)
	}
	return statusErr(req, res)
}

// onRefer answers a REFER and reports the transfer outcome in a NOTIFY
// (RFC 3515): first 100 Trying, then the final status.
func (d *Dialer) onRefer(req *sip.Request, tx sip.ServerTransaction) {
	c := d.lookup(req)
	if c == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
		return
	}
	referTo := ""
	if h := req.GetHeader("Refer-To"); h != nil {
		referTo = strings.Trim(strings.TrimSpace(h.Value()), "<>")
	}
	c.emit(Event{Kind: "refer_received", Detail: referTo})
	if c.onRefer == nil || referTo == "" {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 603, "Decline", nil))
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, 202, "Accepted", nil))
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
	defer cancel()
	notify := func(status int, reason, state string) {
		n := c.dlg.newRequest(sip.NOTIFY, []byte(fmt.Sprintf("SIP/2.0 %d %s\r\n", status, reason)),
			sip.NewHeader("Event", "refer"),
			sip.NewHeader("Subscription-State", state),
			sip.NewHeader("Content-Type", "message/sipfrag;version=2.0"),
		)
		if _, err := c.dlg.do(ctx, n); err != nil {
			c.log.Debug().Err(err).Msg("notify failed")
		}
	}
	notify(100, "Trying", "active;expires=60")
	status := c.onRefer(referTo)
	reason := "OK"
	if status >= 300 {
		reason = "Failed"
	}
	notify(status, reason, "terminated;reason=noresource")
}
