package sip

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// RegisterTransports are the transports a registration may use.
var RegisterTransports = []string{"udp", "tcp", "tls"}

// DefaultRegisterExpires is the registration interval asked for when a
// Binding names none.
const DefaultRegisterExpires = 300 * time.Second

// maxRegisterRounds bounds the requests of one Register or Unregister:
// a challenge, a 423, a challenge again, a new public address.
const maxRegisterRounds = 6

// Errors of registrations.
var (
	errRegistrarURI = errors.New("sip: not a registrar URI")
	// ErrContactInUse means another registration of the server registers
	// the same contact user.
	ErrContactInUse = errors.New("sip: contact user registered by another registration")
	// ErrRegistrationClosed means the registration was closed.
	ErrRegistrationClosed = errors.New("sip: registration closed")
)

// Binding is what the appliance registers at a registrar (RFC 3261
// section 10): the address of record Username@registrar-host bound to
// the Contact ContactUser@<this server>.
type Binding struct {
	// Registrar is sip:host[:port]: the REGISTER's Request-URI and the
	// domain of the address of record.
	Registrar string
	// Transport is udp (the default), tcp or tls.
	Transport string
	// OutboundProxy, when set (sip:host[:port]), is where REGISTERs are
	// sent; else to the registrar.
	OutboundProxy string
	// Username is the user of the address of record; AuthUsername ("":
	// Username) and Password answer the registrar's digest challenge
	// (SHA-256 preferred over MD5).
	Username     string
	AuthUsername string
	Password     string
	// ContactUser is the user of the Contact ("": Username): INVITEs that
	// arrive with it in their Request-URI route to Numbers.
	ContactUser string
	// Expires is the interval asked for (default DefaultRegisterExpires);
	// a registrar's 423 raises it to its Min-Expires.
	Expires time.Duration
	// Numbers are the E.164 numbers the registration serves: an INVITE on
	// the contact goes to the one its To names, else to the first.
	Numbers []string
}

func (b Binding) contactUser() string {
	if b.ContactUser != "" {
		return b.ContactUser
	}
	return b.Username
}

// RegisterError says why a REGISTER failed: the registrar's final
// status (Status > 0) or Err (no answer, a transport failure).
type RegisterError struct {
	Status int
	Reason string
	Err    error
}

// Error describes the failure.
func (e *RegisterError) Error() string {
	switch {
	case e.Status > 0 && e.Err != nil:
		return fmt.Sprintf("sip: register answered %d %s: %v", e.Status, e.Reason, e.Err)
	case e.Status > 0:
		return fmt.Sprintf("sip: register answered %d %s", e.Status, e.Reason)
	case e.Err != nil:
		return "sip: register: " + e.Err.Error()
	}
	return "sip: register failed"
}

// Unwrap is the cause.
func (e *RegisterError) Unwrap() error { return e.Err }

// Registered is the outcome of a successful REGISTER.
type Registered struct {
	// Status is the registrar's 2xx.
	Status int
	// Expires is the interval the registrar granted our contact.
	Expires time.Duration
	// Contact is the Contact registered (after a rewrite to the public
	// address the registrar saw, see Registration).
	Contact string
}

// CheckRegistrarURI checks a registrar's or an outbound proxy's URI:
// sip:host[:port], no user part, no parameters (the transport is a field
// of its own). It returns the host, for the caller's address policy.
func CheckRegistrarURI(s string) (host string, err error) {
	u, err := parseRegistrarURI(s)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

func parseRegistrarURI(s string) (sip.Uri, error) {
	if strings.Contains(strings.ToLower(s), "transport=") {
		return sip.Uri{}, fmt.Errorf("%w: %q names its transport; the registration's transport field does", errRegistrarURI, s)
	}
	if strings.HasPrefix(strings.ToLower(s), "sips:") {
		return sip.Uri{}, fmt.Errorf("%w: %q is sips:; write sip: and set the registration's transport to tls", errRegistrarURI, s)
	}
	u, err := parseURI(s)
	if err != nil {
		return u, fmt.Errorf("%w: %w", errRegistrarURI, err)
	}
	if u.User != "" {
		return u, fmt.Errorf("%w: %q has a user part; the username is a field of its own", errRegistrarURI, s)
	}
	if len(u.UriParams) > 0 {
		return u, fmt.Errorf("%w: %q has parameters", errRegistrarURI, s)
	}
	return u, nil
}

// Registration is one binding the server keeps at a registrar: it sends
// the REGISTERs (one Call-ID, increasing CSeqs, from the server's own
// socket so the registrar's INVITEs come back to it), and routes the
// INVITEs that arrive on its contact to its numbers until Close. Its
// owner decides when to register, refresh and unregister.
//
// NAT: the Via asks for rport (RFC 3581). When the server has no
// sip.public_addr and the registrar saw a UDP REGISTER come from another
// address than the Contact names, the Contact moves to that address (the
// old one is removed in the same REGISTER), so the registrar's INVITEs go
// through the NAT binding that KeepAlive holds open.
type Registration struct {
	srv       *Server
	b         Binding
	log       zerolog.Logger
	aor       sip.Uri
	reqURI    sip.Uri
	next      sip.Uri // the registrar or the outbound proxy
	transport string  // UDP, TCP or TLS
	callID    string
	fromTag   string

	mu         sync.Mutex
	cseq       uint32
	minExpires time.Duration
	challenge  *sip.Response // the last digest challenge, answered again until refused
	public     netip.AddrPort
	dst        netip.AddrPort // the address REGISTERs last went to
	closed     bool
}

// NewRegistration prepares a registration of b: nothing is sent until
// Register. INVITEs arriving with b's contact user in their Request-URI
// route to b.Numbers from now until Close; ErrContactInUse when another
// registration holds the contact user.
func (s *Server) NewRegistration(b Binding) (*Registration, error) {
	reg, err := parseRegistrarURI(b.Registrar)
	if err != nil {
		return nil, err
	}
	next := reg
	if b.OutboundProxy != "" {
		if next, err = parseRegistrarURI(b.OutboundProxy); err != nil {
			return nil, err
		}
	}
	tr := strings.ToUpper(b.Transport)
	switch tr {
	case "":
		tr = "UDP"
	case "UDP", "TCP", "TLS":
	default:
		return nil, fmt.Errorf("%w: transport %q is not one of %v", errRegistrarURI, b.Transport, RegisterTransports)
	}
	if b.Username == "" || !userRE(b.Username) || !userRE(b.contactUser()) {
		return nil, fmt.Errorf("%w: the username and contact user must be SIP users", errRegistrarURI)
	}
	if b.Expires <= 0 {
		b.Expires = DefaultRegisterExpires
	}
	r := &Registration{
		srv: s, b: b, next: next, transport: tr, callID: uuid.NewString(), fromTag: sip.GenerateTagN(16),
		aor:    sip.Uri{Scheme: "sip", User: b.Username, Host: reg.Host},
		reqURI: sip.Uri{Scheme: "sip", Host: reg.Host, Port: reg.Port},
		cseq:   uint32(rand.IntN(1 << 15)),
		log: s.log.With().Str("registrar", b.Registrar).Str("aor", b.Username+"@"+reg.Host).
			Str("contact_user", b.contactUser()).Str("transport", strings.ToLower(tr)).Logger(),
	}
	if err := s.contacts.add(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Binding is what r registers.
func (r *Registration) Binding() Binding { return r.b }

// Register sends a REGISTER binding our contact for the interval asked
// for, answering a digest challenge (401/407) and following a 423's
// Min-Expires (kept for later REGISTERs); a *RegisterError when the
// registrar refused it or could not be reached.
func (r *Registration) Register(ctx context.Context) (Registered, error) {
	r.mu.Lock()
	expires := max(r.b.Expires, r.minExpires)
	r.mu.Unlock()
	return r.exchange(ctx, expires)
}

// Unregister removes our contact (Expires: 0).
func (r *Registration) Unregister(ctx context.Context) error {
	_, err := r.exchange(ctx, 0)
	return err
}

// Close stops routing the contact's INVITEs here; it does not unregister.
// It is idempotent.
func (r *Registration) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.srv.contacts.remove(r)
}

// KeepAlive keeps the path to the registrar open (a NAT's binding): a
// CRLF ping over UDP (RFC 5626 section 3.5.1 keeps it for streams; a
// double CRLF datagram is what phones and PBXs send and registrars
// ignore), an OPTIONS over TCP and TLS, on the connection the REGISTERs
// use.
func (r *Registration) KeepAlive(ctx context.Context) error {
	r.mu.Lock()
	dst, closed := r.dst, r.closed
	r.mu.Unlock()
	if closed {
		return ErrRegistrationClosed
	}
	if r.transport == "UDP" {
		if !dst.IsValid() {
			return nil // not registered yet: nothing to keep open
		}
		r.srv.writeUDP([]byte("\r\n\r\n"), dst)
		return nil
	}
	req := r.request(sip.OPTIONS, r.reqURI, -1, nil)
	res, err := r.do(ctx, req)
	if err != nil {
		return err
	}
	if res.StatusCode >= 500 {
		return &RegisterError{Status: res.StatusCode, Reason: res.Reason}
	}
	return nil
}

// exchange sends REGISTERs with expires (0: remove our contact) until the
// registrar accepts or refuses for good.
func (r *Registration) exchange(ctx context.Context, expires time.Duration) (Registered, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Registered{}, ErrRegistrationClosed
	}
	r.mu.Unlock()
	var (
		fresh  bool // the next request answers the challenge just received
		remove *sip.ContactHeader
		last   *sip.Response
	)
	for range maxRegisterRounds {
		sentFresh := fresh
		fresh = false
		req := r.request(sip.REGISTER, r.reqURI, expires, remove)
		res, err := r.do(ctx, req)
		if err != nil {
			return Registered{}, &RegisterError{Err: err}
		}
		last = res
		switch {
		case res.StatusCode == 401 || res.StatusCode == 407:
			if sentFresh && !staleChallenge(res) {
				// Our answer to this very challenge was refused: the
				// credentials are wrong.
				return Registered{}, &RegisterError{Status: res.StatusCode, Reason: res.Reason, Err: errors.New("credentials refused")}
			}
			if r.b.Password == "" {
				return Registered{}, &RegisterError{Status: res.StatusCode, Reason: res.Reason, Err: errors.New("challenged, and no password is set")}
			}
			r.mu.Lock()
			r.challenge = res
			r.mu.Unlock()
			fresh = true
			continue
		case res.StatusCode == 423:
			// RFC 3261 section 10.2.8: retry with the registrar's minimum.
			min := minExpires(res)
			if min <= expires || expires == 0 {
				return Registered{}, &RegisterError{Status: 423, Reason: res.Reason, Err: fmt.Errorf("no usable Min-Expires (%v)", min)}
			}
			r.log.Info().Dur("min_expires", min).Dur("asked", expires).Msg("registrar wants a longer interval")
			r.mu.Lock()
			r.minExpires = min
			r.mu.Unlock()
			expires = min
			continue
		case !res.IsSuccess():
			return Registered{}, &RegisterError{Status: res.StatusCode, Reason: res.Reason}
		}
		if expires > 0 && remove == nil {
			if old, moved := r.learnPublic(res); moved {
				remove = old
				continue
			}
		}
		c := r.contact()
		return Registered{Status: res.StatusCode, Expires: r.granted(res, expires), Contact: c.Address.String()}, nil
	}
	return Registered{}, &RegisterError{Status: last.StatusCode, Reason: last.Reason, Err: errors.New("too many rounds")}
}

// request builds a REGISTER (expires ≥ 0) or an OPTIONS (expires < 0)
// to target, with credentials for the last challenge when there is one.
func (r *Registration) request(method sip.RequestMethod, target sip.Uri, expires time.Duration, remove *sip.ContactHeader) *sip.Request {
	r.mu.Lock()
	r.cseq++
	cseq, chal := r.cseq, r.challenge
	r.mu.Unlock()
	req := sip.NewRequest(method, target)
	from := &sip.FromHeader{Address: r.aor, Params: sip.NewParams()}
	from.Params.Add("tag", r.fromTag)
	to := &sip.ToHeader{Address: r.aor, Params: sip.NewParams()}
	callID := sip.CallIDHeader(r.callID)
	maxFwd := sip.MaxForwardsHeader(70)
	req.AppendHeader(from)
	req.AppendHeader(to)
	req.AppendHeader(&callID)
	req.AppendHeader(&sip.CSeqHeader{SeqNo: cseq, MethodName: method})
	req.AppendHeader(&maxFwd)
	if method == sip.REGISTER {
		contact := r.contact()
		req.AppendHeader(&contact)
		if remove != nil {
			old := remove.Clone()
			old.Params = sip.NewParams()
			old.Params.Add("expires", "0")
			req.AppendHeader(old)
		}
		req.AppendHeader(sip.NewHeader("Expires", strconv.Itoa(int(expires/time.Second))))
		req.AppendHeader(sip.NewHeader("Allow", allowMethods))
	}
	req.AppendHeader(sip.NewHeader("User-Agent", r.srv.opts.UserAgent))
	req.SetTransport(r.transport)
	if chal != nil && method == sip.REGISTER {
		if h, err := authorization(chal, req, r.authUser(), r.b.Password); err == nil {
			req.AppendHeader(h)
		}
	}
	req.SetBody(nil)
	return req
}

func (r *Registration) authUser() string {
	if r.b.AuthUsername != "" {
		return r.b.AuthUsername
	}
	return r.b.Username
}

// contact is the Contact of our binding: the contact user at the
// server's public address (or the one the registrar saw), on our
// transport.
func (r *Registration) contact() sip.ContactHeader {
	c := r.srv.contactFor(r.transport)
	c.Address.User = r.b.contactUser()
	r.mu.Lock()
	if r.public.IsValid() {
		c.Address.Host, c.Address.Port = r.public.Addr().String(), int(r.public.Port())
	}
	r.mu.Unlock()
	return c
}

// do sends req to the registrar (or the proxy) and returns its final
// response.
func (r *Registration) do(ctx context.Context, req *sip.Request) (*sip.Response, error) {
	dst, err := r.srv.resolveTarget(ctx, r.next)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.dst = dst
	r.mu.Unlock()
	r.srv.contacts.allowPeer(r, dst.Addr())
	req.SetDestination(dst.String())
	if r.transport == "TLS" {
		// By name, so that the certificate is checked against it (sipgo
		// resolves it again).
		req.SetDestination(hostPort(r.next))
	}
	if r.transport == "UDP" {
		// From the server's socket: the registrar's INVITEs come back to it.
		if err := r.srv.udpServing(ctx); err != nil {
			return nil, err
		}
		la := r.srv.UDPAddr()
		req.Laddr = sip.Addr{IP: la.Addr().AsSlice(), Port: int(la.Port()), Hostname: la.Addr().String()}
	}
	tx, err := r.srv.client.TransactionRequest(ctx, req, addViaRport)
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", req.Method, err)
	}
	return finalResponse(ctx, tx, req.Method)
}

// udpServing waits until sipgo serves the UDP socket (Serve hands it over
// on a goroutine of its own): a request sent from it before would make
// sipgo bind a second socket on its address, which fails.
func (s *Server) udpServing(ctx context.Context) error {
	addr := s.udp.LocalAddr().String()
	for {
		if c, err := s.ua.TransportLayer().GetConnection("udp", addr); err == nil && c != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sip server not serving: %w", context.Cause(ctx))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// addViaRport adds our Via asking for rport (RFC 3581): the registrar
// answers to the address and port the request came from and says which
// they were.
func addViaRport(c *sipgo.Client, req *sip.Request) error {
	if err := sipgo.ClientRequestAddVia(c, req); err != nil {
		return err
	}
	if v := req.Via(); v != nil && !v.Params.Has("rport") {
		v.Params.Add("rport", "")
	}
	return nil
}
