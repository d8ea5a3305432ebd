package sip

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/rs/zerolog"
)

// The gate is what every byte from the network meets before sipgo's
// transaction layer: blocked sources are dropped unread, a UDP datagram is
// parsed and checked (checkRequest) and, when it is refused, answered once
// and statelessly from here, so a bad message never creates a transaction
// that would retransmit its answer. Stream transports (TCP, TLS) deliver
// chunks, not messages: for them the gate closes the connections of
// blocked sources and the same checks run in the request handler.

// errParserPanic is what safeParse returns when the parser panicked.
var errParserPanic = errors.New("sip: the parser panicked on this message")

// safeParse parses one message, turning a panic of the parser into an
// error: the message is then refused like any malformed one.
func safeParse(p *sip.Parser, data []byte) (msg sip.Message, err error) {
	defer func() {
		if v := recover(); v != nil {
			msg, err = nil, fmt.Errorf("%w: %v", errParserPanic, v)
		}
	}()
	return p.ParseSIP(data)
}

// errBlockedSource makes sipgo close a stream connection whose source was
// blocked while it was open.
var errBlockedSource = errors.New("sip: source blocked")

// floodSampler bounds the log lines of refusals and bad messages: the
// first few each second, then one in a thousand. Metrics count them all.
func floodSampler() zerolog.Sampler {
	return &zerolog.BurstSampler{Burst: 10, Period: time.Second, NextSampler: &zerolog.BasicSampler{N: 1000}}
}

// readFilter is sipgo's transport read filter (WithTransportLayerReadFilter).
func (s *Server) readFilter(p sip.TransportReadProps, data []byte) ([]byte, error) {
	src := netAddrPort(p.RemoteAddr)
	if p.Transport != "UDP" {
		if s.shut(src.Addr()) {
			return nil, errBlockedSource
		}
		// A stream is parsed by sipgo's reader goroutine, where a parser
		// panic would end the process: a chunk that makes the parser
		// panic on its own closes the connection first.
		if _, err := safeParse(s.parser, data); errors.Is(err, errParserPanic) {
			s.malformed.Add(1)
			return nil, err
		}
		return data, nil
	}
	return s.filterDatagram(src, data), nil
}

// shut reports whether src is blocked and has no call in progress (a
// trunk that misbehaves keeps its live calls: their in-dialog requests
// still pass).
func (s *Server) shut(src netip.Addr) bool {
	if !s.flood.blocked(src) {
		return false
	}
	s.mu.Lock()
	n := s.callSources[src]
	s.mu.Unlock()
	if n > 0 {
		return false
	}
	s.dropped.Add(1)
	return true
}

// filterDatagram returns what sipgo should parse of one datagram: the
// datagram itself, or nil when it was dropped or already answered.
func (s *Server) filterDatagram(src netip.AddrPort, data []byte) []byte {
	if s.shut(src.Addr()) {
		return nil
	}
	if len(bytes.Trim(data, "\r\n\x00")) == 0 {
		return nil // keep-alive (RFC 5626 section 4.4.1)
	}
	msg, err := safeParse(s.parser, data)
	if err != nil {
		s.badDatagram(src, data, err)
		return nil
	}
	req, ok := msg.(*sip.Request)
	if !ok {
		return data // a response: sipgo matches it to our client transaction
	}
	if s.closed.Load() {
		return nil // closing: a new transaction now would outlive the listener (see Close)
	}
	req.SetSource(src.String())
	req.SetTransport("UDP")
	if r := checkRequest(req); r != nil {
		if !req.IsAck() {
			res := sip.NewResponseFromRequest(req, r.status, r.reason, nil)
			res.SipVersion = "SIP/2.0"
			res.AppendHeader(sip.NewHeader("Server", s.opts.UserAgent))
			for _, h := range r.headers {
				res.AppendHeader(h)
			}
			s.writeUDP([]byte(res.String()), src)
		}
		s.sourceFailed(src.Addr(), string(req.Method), r.status, r.reason)
		return nil
	}
	if normalizeRequest(req) {
		return []byte(req.String())
	}
	return data
}

// badDatagram answers a datagram the parser refused when it carries
// enough to address an answer (rawResponse), counts it against its source
// and logs it (sampled, never the datagram itself).
func (s *Server) badDatagram(src netip.AddrPort, data []byte, err error) {
	status := 0
	if res := rawResponse(data, s.opts.UserAgent); res != nil {
		s.writeUDP(res.bytes, src)
		status = res.status
	}
	why := err.Error()
	if len(why) > 120 {
		why = why[:120]
	}
	s.floodLog.Info().Str("src", src.String()).Int("bytes", len(data)).Str("error", why).Int("status", status).
		Msg("malformed SIP message refused")
	s.malformed.Add(1)
	s.blockOnFailure(src.Addr())
}

func (s *Server) writeUDP(b []byte, dst netip.AddrPort) {
	if _, err := s.udp.WriteTo(b, net.UDPAddrFromAddrPort(dst)); err != nil {
		s.log.Debug().Err(err).Str("dst", dst.String()).Msg("stateless response not sent")
	}
}

// sourceFailed counts a refused request against its source and logs the
// refusal (sampled).
func (s *Server) sourceFailed(src netip.Addr, method string, status int, reason string) verdict {
	v := s.blockOnFailure(src)
	if v != alreadyBlocked {
		s.floodLog.Info().Str("src", src.String()).Str("method", method).Int("status", status).Str("reason", reason).
			Msg("sip request refused")
	}
	return v
}

func (s *Server) blockOnFailure(src netip.Addr) verdict {
	v := s.flood.fail(src)
	if v == blockedNow {
		s.floodLog.Warn().Str("src", src.String()).Int("limit", s.opts.SourceFailLimit).
			Dur("window", s.opts.SourceFailWindow).Dur("block", s.opts.SourceBlockTime).
			Msg("source blocked: too many failing requests; it gets no answer until the block ends")
	}
	return v
}

// refuse answers a request turned away before any call exists: once,
// without the retransmissions of the INVITE server transaction (a peer
// that missed the answer retransmits its request and gets it again; a
// spoofed source gets one answer per request it was sent, never five), and
// counted against the source.
//
// A request that passed the gate before its source was blocked (it was in
// flight) is not answered either; refuse reports whether it answered.
func (s *Server) refuse(req *sip.Request, tx sip.ServerTransaction, status int, reason string, headers ...sip.Header) bool {
	return s.refuseAfter(req, tx, false, status, reason, headers...)
}

// refuseAfter is refuse for an INVITE that may have had a provisional
// response already (proceeding; see endRefused).
func (s *Server) refuseAfter(req *sip.Request, tx sip.ServerTransaction, proceeding bool, status int, reason string, headers ...sip.Header) bool {
	src := sourceAddr(req)
	if s.sourceFailed(src, string(req.Method), status, reason) == alreadyBlocked {
		s.dropped.Add(1)
		tx.Terminate()
		return false
	}
	s.respond(req, tx, status, reason, nil, headers...)
	endRefused(req, tx, proceeding)
	return true
}

// refusedRetransmitBudget is how long the final answer to a refused
// INVITE is retransmitted when the caller had a provisional response
// already: twice (at T1 and 3*T1), not until Timer H (ten times).
const refusedRetransmitBudget = 4 * 500 * time.Millisecond

// endRefused ends the transaction of a request answered with a final
// error. A caller that has had no provisional response still retransmits
// its request (RFC 3261 section 17.1.1.2, Timer A) and gets the answer
// again if it was lost: the transaction ends at once, nothing is
// retransmitted. An INVITE that has had its 100 Trying (sipgo sends it
// after Timer_1xx) waits for our answer without retransmitting: the
// answer is retransmitted for refusedRetransmitBudget, then the
// transaction ends whether or not the ACK came.
func endRefused(req *sip.Request, tx sip.ServerTransaction, proceeding bool) {
	if !proceeding || !req.IsInvite() || !strings.EqualFold(req.Transport(), "UDP") {
		tx.Terminate()
		return
	}
	time.AfterFunc(refusedRetransmitBudget, tx.Terminate)
}

// sourceAddr is the address a request came from (the zero Addr when the
// transport did not say).
func sourceAddr(req *sip.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.Source())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func netAddrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.UDPAddr:
		ap = a.AddrPort()
	case *net.TCPAddr:
		ap = a.AddrPort()
	default:
		if a != nil {
			ap, _ = netip.ParseAddrPort(a.String())
		}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// errNoCallThere refuses a stream connection the server would open to an
// address that has no call in progress.
var errNoCallThere = errors.New("sip: no call with that address: not connecting")

// streamDialer is the dialer of the TCP and TLS transports. sipgo opens a
// connection when an answer's connection is gone (to the Via's port at
// the source address, or to the Via's host): left alone, anyone could make
// the server connect to a port of their choosing. The server opens stream
// connections only toward the peers of its calls (in-dialog requests) and
// the registrars of its registrations.
func (s *Server) streamDialer(laddr net.Addr) net.Dialer {
	return net.Dialer{
		Timeout:   s.opts.RequestTimeout,
		LocalAddr: laddr,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return errNoCallThere
			}
			s.mu.Lock()
			n := s.callSources[ap.Addr().Unmap()]
			s.mu.Unlock()
			if n == 0 && !s.contacts.peer(ap.Addr().Unmap()) {
				return errNoCallThere
			}
			return nil
		},
	}
}

// rawAnswer is a stateless response built from the raw lines of a message
// the parser refused.
type rawAnswer struct {
	status int
	bytes  []byte
}

// rawResponse answers a request the parser refused with 400 (505 for
// another SIP version, 416 for another URI scheme), copying Via, From,
// To, Call-ID and CSeq from its raw lines so the sender can match it. It
// returns nil for a response, an ACK, or a message without a Via.
func rawResponse(data []byte, server string) *rawAnswer {
	head := data
	if i := bytes.Index(data, []byte("\r\n\r\n")); i >= 0 {
		head = data[:i]
	}
	var lines []string
	for _, l := range strings.Split(string(head), "\n") {
		l = strings.TrimRight(l, "\r")
		if len(lines) > 0 && l != "" && (l[0] == ' ' || l[0] == '\t') {
			lines[len(lines)-1] += " " + strings.TrimSpace(l) // folded line
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 || strings.HasPrefix(lines[0], "SIP/") {
		return nil
	}
	start := strings.Fields(lines[0])
	if len(start) == 0 || strings.EqualFold(start[0], "ACK") {
		return nil
	}
	status, reason := 400, "Bad Request (malformed message)"
	if len(start) == 3 && strings.HasPrefix(start[2], "SIP/") && start[2] != "SIP/2.0" {
		status, reason = 505, "Version Not Supported"
	} else if len(start) == 3 && start[2] == "SIP/2.0" {
		if scheme, _, ok := strings.Cut(start[1], ":"); ok && isScheme(scheme) && !strings.EqualFold(scheme, "sip") && !strings.EqualFold(scheme, "sips") {
			status, reason = 416, "Unsupported URI Scheme"
		}
	}
	var vias []string
	single := map[string]string{}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if c, ok := compactNames[name]; ok {
			name = strings.ToLower(c)
		}
		value = strings.TrimSpace(value)
		if !printable(value) || len(value) > 1024 {
			return nil
		}
		switch name {
		case "via":
			if len(vias) < 16 {
				vias = append(vias, value)
			}
		case "from", "to", "call-id", "cseq":
			if _, dup := single[name]; !dup {
				single[name] = value
			}
		}
	}
	if len(vias) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("SIP/2.0 ")
	b.WriteString(strconv.Itoa(status))
	b.WriteString(" " + reason + "\r\n")
	for _, v := range vias {
		b.WriteString("Via: " + v + "\r\n")
	}
	if v, ok := single["from"]; ok {
		b.WriteString("From: " + v + "\r\n")
	}
	if v, ok := single["to"]; ok {
		if !strings.Contains(strings.ToLower(v), "tag=") {
			v += ";tag=" + sip.GenerateTagN(10)
		}
		b.WriteString("To: " + v + "\r\n")
	}
	if v, ok := single["call-id"]; ok {
		b.WriteString("Call-ID: " + v + "\r\n")
	}
	if v, ok := single["cseq"]; ok {
		b.WriteString("CSeq: " + v + "\r\n")
	}
	b.WriteString("Server: " + server + "\r\nContent-Length: 0\r\n\r\n")
	return &rawAnswer{status: status, bytes: []byte(b.String())}
}

func isScheme(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// printable refuses control characters (a header value copied into an
// answer must not smuggle a line break or a NUL).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
