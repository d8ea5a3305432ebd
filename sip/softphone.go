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
	"github.com/rs/zerolog"
)

// transportReadyTimeout bounds the wait for sipgo to register the
// softphone's UDP socket, which takes microseconds once ServeUDP ran.
const transportReadyTimeout = 2 * time.Second

// SoftphoneOptions configures a Softphone.
type SoftphoneOptions struct {
	// LocalAddr is the local SIP address for UDP ("127.0.0.1:0" by
	// default); requests leave from it and in-dialog requests arrive on it.
	LocalAddr string
	// UserAgent is the User-Agent header. Default "switchboard".
	UserAgent string
}

// Softphone is a SIP phone of its own: a user agent on its own UDP socket
// that calls a SIP server (`switchboard dial` places its test calls with
// it, and the tests their callers). Its INVITEs go through the same
// user-agent client as the Server's placed calls (inviteClient); in a call
// it sends BYE and INFO and takes BYE, INFO, OPTIONS and REFER. One
// Softphone can hold several calls.
type Softphone struct {
	log    zerolog.Logger
	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	client *sipgo.Client
	udp    net.PacketConn
	name   string

	mu    sync.Mutex
	calls map[string]*SoftphoneCall

	serveDone chan struct{}
	closeOnce sync.Once
	closing   atomic.Bool
	closeErr  error
}

// NewSoftphone binds the local UDP socket and starts reading it.
func NewSoftphone(opts SoftphoneOptions, log zerolog.Logger) (*Softphone, error) {
	if opts.LocalAddr == "" {
		opts.LocalAddr = "127.0.0.1:0"
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	udp, err := net.ListenPacket("udp", opts.LocalAddr)
	if err != nil {
		return nil, fmt.Errorf("softphone listen %s: %w", opts.LocalAddr, err)
	}
	laddr := udp.LocalAddr().String()
	host, _, _ := net.SplitHostPort(laddr)
	slogger := newSlogLogger(log)
	p := &Softphone{log: log, udp: udp, name: opts.UserAgent, calls: map[string]*SoftphoneCall{}, serveDone: make(chan struct{})}
	p.ua, err = sipgo.NewUA(
		sipgo.WithUserAgent(opts.UserAgent),
		sipgo.WithUserAgentHostname(host),
		sipgo.WithUserAgentTransactionLayerOptions(
			sip.WithTransactionLayerLogger(slogger),
			sip.WithTransactionLayerUnhandledResponseHandler(p.onStrayResponse),
		),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(slogger)),
	)
	if err != nil {
		_ = udp.Close()
		return nil, fmt.Errorf("softphone user agent: %w", err)
	}
	if p.srv, err = sipgo.NewServer(p.ua, sipgo.WithServerLogger(slogger)); err != nil {
		_ = udp.Close()
		return nil, errors.Join(err, p.ua.Close())
	}
	if p.client, err = sipgo.NewClient(p.ua, sipgo.WithClientLogger(slogger), sipgo.WithClientHostname(host)); err != nil {
		_ = udp.Close()
		return nil, errors.Join(err, p.ua.Close())
	}
	p.srv.OnBye(p.onBye)
	p.srv.OnInfo(p.onInDialog(200))
	p.srv.OnRefer(p.onRefer)
	p.srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
	})
	p.srv.OnAck(func(*sip.Request, sip.ServerTransaction) {})
	p.srv.OnNoRoute(func(req *sip.Request, tx sip.ServerTransaction) {
		res := sip.NewResponseFromRequest(req, 405, "Method Not Allowed", nil)
		res.AppendHeader(sip.NewHeader("Allow", "ACK, BYE, INFO, OPTIONS, REFER"))
		_ = tx.Respond(res)
	})
	go func() {
		defer close(p.serveDone)
		_ = p.srv.ServeUDP(tapConn{PacketConn: udp, p: p})
	}()
	// Requests must leave from this socket (dialog.laddr), which sipgo
	// finds in its pool once ServeUDP registered it: wait for that.
	tl := p.ua.TransportLayer()
	for deadline := time.Now().Add(transportReadyTimeout); ; time.Sleep(time.Millisecond) {
		if c, err := tl.GetConnection("udp", laddr); err == nil && c != nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(errors.New("softphone: the UDP listener did not start"), p.Close())
		}
	}
	return p, nil
}

// LocalAddr is the bound UDP address.
func (p *Softphone) LocalAddr() netip.AddrPort { return addrPort(p.udp.LocalAddr()) }

// Close hangs up nothing: it ends every call's context, closes the socket
// and waits for the reader. Idempotent.
func (p *Softphone) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		calls := make([]*SoftphoneCall, 0, len(p.calls))
		for _, c := range p.calls {
			calls = append(calls, c)
		}
		p.mu.Unlock()
		for _, c := range calls {
			c.end(ErrShutdown)
		}
		p.closing.Store(true) // the tap drops new requests (see Server.Close)
		time.Sleep(closeQuiesce)
		err := p.udp.Close()
		<-p.serveDone
		p.closeErr = errors.Join(p.ua.Close(), ignoreClosed(err))
	})
	return p.closeErr
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// SoftphoneEvent is one step of a softphone call's timeline.
type SoftphoneEvent struct {
	Time time.Time
	// Kind is one of "invite_sent", "provisional", "challenge", "answered",
	// "ack_sent", "failed", "cancel_sent", "bye_sent", "bye_received",
	// "info_sent", "refer_received".
	Kind   string
	Status int
	Reason string
	Detail string
}

// DialRequest describes one call a Softphone places.
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
	// OnEvent receives the timeline; called from the softphone's goroutines.
	OnEvent func(SoftphoneEvent)
	// OnRefer, when set, makes the softphone a transferee (RFC 3515): it
	// accepts a REFER from the server (202) and reports the final status
	// OnRefer returns for the transfer in a NOTIFY message/sipfrag (tests
	// play the transfer target with it). Without it REFER is declined
	// with 603, as `switchboard dial` does.
	OnRefer func(referTo string) int
}

// SoftphoneCall is a call a Softphone placed, once answered.
type SoftphoneCall struct {
	p       *Softphone
	dlg     *dialog
	uac     *inviteClient
	media   MediaParams
	onEvent func(SoftphoneEvent)
	onRefer func(string) int
	log     zerolog.Logger

	ctx     context.Context
	cancel  context.CancelCauseFunc
	endOnce sync.Once
}

// Dial sends INVITE with an SDP offer, follows provisional responses,
// answers one digest challenge, sends ACK for the 2xx and returns the
// answered call (inviteClient, the user-agent client that placed calls
// share). Cancelling ctx before the answer sends CANCEL, and Dial returns
// ctx's cause. A final error response is returned as *StatusError.
func (p *Softphone) Dial(ctx context.Context, r DialRequest) (*SoftphoneCall, error) {
	emit := func(e SoftphoneEvent) {
		e.Time = time.Now()
		if r.OnEvent != nil {
			r.OnEvent(e)
		}
	}
	if r.Transport == "" {
		r.Transport = "udp"
	}
	if r.From == "" {
		r.From = p.name
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
	local := p.LocalAddr()
	sdpState := newLocalSDP(uint64(time.Now().Unix()))
	dtmf := uint8(0)
	if r.DTMFPayloadType > 0 {
		dtmf = uint8(r.DTMFPayloadType)
	}
	offer, err := sdpState.offer(r.RTPAddr, r.Codecs, dtmf, r.Ptime, SendRecv, nil)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	dlg := &dialog{
		client: p.client, callID: uuid.NewString(),
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
		dlg.laddr = &sip.Addr{IP: local.Addr().AsSlice(), Port: int(local.Port()), Hostname: local.Addr().String()}
	}
	if transport == "TCP" {
		dlg.contact.Address.UriParams = sip.NewParams()
		dlg.contact.Address.UriParams.Add("transport", "tcp")
	}
	headers := make([]sip.Header, 0, len(r.Headers)+1)
	for _, h := range r.Headers {
		headers = append(headers, sip.NewHeader(h.Name, h.Value))
	}
	headers = append(headers, sip.NewHeader("User-Agent", p.name))
	c := &SoftphoneCall{p: p, dlg: dlg, onEvent: r.OnEvent, onRefer: r.OnRefer, log: p.log.With().Str("sip_call_id", dlg.callID).Logger()}
	c.uac = &inviteClient{
		client: p.client, dlg: dlg, offer: offer, codecs: r.Codecs, headers: headers,
		user: r.User, password: r.Password, requestTimeout: DefaultRequestTimeout,
		on: uacHooks{
			sending: func(invite *sip.Request) {
				emit(SoftphoneEvent{Kind: "invite_sent", Detail: invite.Recipient.String()})
			},
			provisional: func(res *sip.Response) {
				if dlg.laddr == nil { // over UDP the socket tap reports them in order
					emit(SoftphoneEvent{Kind: "provisional", Status: res.StatusCode, Reason: res.Reason})
				}
			},
			challenged: func(res *sip.Response) {
				emit(SoftphoneEvent{Kind: "challenge", Status: res.StatusCode, Reason: res.Reason})
			},
			cancelling: func() { emit(SoftphoneEvent{Kind: "cancel_sent"}) },
			answered: func(res *sip.Response) {
				emit(SoftphoneEvent{Kind: "answered", Status: res.StatusCode, Reason: res.Reason})
				emit(SoftphoneEvent{Kind: "ack_sent"})
			},
		},
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	p.mu.Lock()
	p.calls[dialogKey(dlg.callID, dlg.localTag)] = c
	p.mu.Unlock()
	media, err := c.uac.run(ctx)
	if err != nil {
		emit(SoftphoneEvent{Kind: "failed", Detail: err.Error()})
		c.end(err)
		var de *DialError
		switch {
		case !errors.As(err, &de):
		case de.Status > 0 && de.Err == nil:
			err = &StatusError{Method: "INVITE", Status: de.Status, Reason: de.Reason}
		case errors.Is(de.Err, context.Cause(ctx)) && ctx.Err() != nil:
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("dial: %w", err)
	}
	c.media = media
	return c, nil
}

// onStrayResponse re-sends the ACK for retransmitted 2xx responses.
func (p *Softphone) onStrayResponse(res *sip.Response) {
	if !res.IsSuccess() || res.CSeq() == nil || res.CSeq().MethodName != sip.INVITE {
		return
	}
	from := res.From()
	if from == nil || res.CallID() == nil {
		return
	}
	tag, _ := from.Params.Get("tag")
	p.mu.Lock()
	c := p.calls[dialogKey(res.CallID().Value(), tag)]
	p.mu.Unlock()
	if c != nil {
		c.uac.reack()
	}
}

func (p *Softphone) lookup(req *sip.Request) *SoftphoneCall {
	to, cid := req.To(), req.CallID()
	if to == nil || cid == nil {
		return nil
	}
	tag, _ := to.Params.Get("tag")
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[dialogKey(cid.Value(), tag)]
}

func (p *Softphone) onBye(req *sip.Request, tx sip.ServerTransaction) {
	c := p.lookup(req)
	if c == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
	detail := ""
	if h := req.GetHeader("Reason"); h != nil {
		detail = h.Value()
	}
	c.emit(SoftphoneEvent{Kind: "bye_received", Detail: detail})
	c.end(ErrRemoteBye)
}

func (p *Softphone) onInDialog(status int) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		c := p.lookup(req)
		if c == nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
			return
		}
		_ = tx.Respond(sip.NewResponseFromRequest(req, status, "OK", nil))
	}
}

func (c *SoftphoneCall) emit(e SoftphoneEvent) {
	e.Time = time.Now()
	if c.onEvent != nil {
		c.onEvent(e)
	}
}

func (c *SoftphoneCall) end(cause error) {
	c.endOnce.Do(func() {
		c.cancel(cause)
		c.p.mu.Lock()
		delete(c.p.calls, dialogKey(c.dlg.callID, c.dlg.localTag))
		c.p.mu.Unlock()
	})
}

// Media is the answered remote media.
func (c *SoftphoneCall) Media() MediaParams { return c.media }

// SIPCallID is the Call-ID of the call.
func (c *SoftphoneCall) SIPCallID() string { return c.dlg.callID }

// Context ends when the call ends; context.Cause tells why.
func (c *SoftphoneCall) Context() context.Context { return c.ctx }

// Hangup sends BYE with a Reason header.
func (c *SoftphoneCall) Hangup(ctx context.Context, reason string) error {
	if c.ctx.Err() != nil {
		return nil
	}
	c.end(ErrLocalHangup)
	bye := c.dlg.newRequest(sip.BYE, nil, reasonHeader("SIP", 200, reason))
	c.emit(SoftphoneEvent{Kind: "bye_sent", Detail: reason})
	res, err := c.dlg.do(ctx, bye)
	if err != nil {
		return fmt.Errorf("hangup: %w", err)
	}
	return statusErr(bye, res)
}

// SendInfo sends an INFO request in the dialog (e.g. application/dtmf-relay).
func (c *SoftphoneCall) SendInfo(ctx context.Context, contentType string, body []byte) error {
	req := c.dlg.newRequest(sip.INFO, body, sip.NewHeader("Content-Type", contentType))
	c.emit(SoftphoneEvent{Kind: "info_sent", Detail: contentType})
	res, err := c.dlg.do(ctx, req)
	if err != nil {
		return fmt.Errorf("info: %w", err)
	}
	return statusErr(req, res)
}

// onRefer answers a REFER and reports the transfer outcome in a NOTIFY
// (RFC 3515): first 100 Trying, then the final status.
func (p *Softphone) onRefer(req *sip.Request, tx sip.ServerTransaction) {
	c := p.lookup(req)
	if c == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
		return
	}
	referTo := ""
	if h := req.GetHeader("Refer-To"); h != nil {
		referTo = strings.Trim(strings.TrimSpace(h.Value()), "<>")
	}
	c.emit(SoftphoneEvent{Kind: "refer_received", Detail: referTo})
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
