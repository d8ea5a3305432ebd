package sip

import (
	"strconv"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// supportedOptions are the SIP option tags (RFC 3261 section 19.2) this
// server implements. A request whose Require names any other tag is
// refused 420 with the tags it lacks in Unsupported; OPTIONS answers
// advertise these in Supported. An extension adds its tag here when it is
// implemented (100rel, timer, ...).
var supportedOptions = []string{tag100rel, tagTimer}

// refusal is why a request is refused before any handler reads it: the
// status, its reason phrase and extra headers for the response.
type refusal struct {
	status  int
	reason  string
	headers []sip.Header
}

func badRequest(why string) *refusal {
	return &refusal{status: 400, reason: "Bad Request (" + why + ")"}
}

// singleValued are the headers RFC 3261 allows once per message (section
// 7.3.1 and the grammar of section 25): a second copy makes the request
// ambiguous (which Call-ID, which CSeq?), so it is refused, never guessed.
var singleValued = []string{"Call-ID", "CSeq", "From", "To", "Max-Forwards", "Content-Length", "Content-Type"}

// checkRequest applies the checks every request must pass before a
// handler reads it (RFC 3261 sections 8.1.1, 8.2.2, 20; RFC 4475): the
// protocol version, the Request-URI scheme, the mandatory headers, the
// single-valued headers, Max-Forwards and CSeq ranges, CSeq method, and
// Require. It returns nil for a request that may go on.
func checkRequest(req *sip.Request) *refusal {
	if req.SipVersion != "SIP/2.0" {
		return &refusal{status: 505, reason: "Version Not Supported"}
	}
	switch strings.ToLower(req.Recipient.Scheme) {
	case "sip", "sips":
	default:
		return &refusal{status: 416, reason: "Unsupported URI Scheme"}
	}
	if req.Recipient.Headers != nil && req.Recipient.Headers.Length() > 0 {
		// RFC 3261 section 19.1.5: headers are not allowed in a
		// Request-URI (RFC 4475 escruri).
		return badRequest("headers in Request-URI")
	}
	switch {
	case req.Via() == nil:
		return badRequest("missing Via")
	case req.CallID() == nil || strings.TrimSpace(req.CallID().Value()) == "":
		return badRequest("missing Call-ID")
	case req.CSeq() == nil:
		return badRequest("missing CSeq")
	case req.From() == nil:
		return badRequest("missing From")
	case req.To() == nil:
		return badRequest("missing To")
	}
	for _, name := range singleValued {
		if len(req.GetHeaders(name)) > 1 {
			return badRequest("duplicate " + name)
		}
	}
	if h := req.GetHeader("Max-Forwards"); h != nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(h.Value()), 10, 32); err != nil || n > 255 {
			return badRequest("bad Max-Forwards")
		}
	}
	cseq := req.CSeq()
	if cseq.SeqNo >= 1<<31 {
		// RFC 3261 section 8.1.1.5: the sequence number is below 2**31.
		return badRequest("CSeq out of range")
	}
	if !strings.EqualFold(string(cseq.MethodName), string(req.Method)) {
		// RFC 3261 section 8.1.1.5 and RFC 4475 mismatch01/02.
		return badRequest("CSeq method mismatch")
	}
	if req.IsAck() || req.IsCancel() {
		// RFC 3261 section 8.2.2.3: Require is not checked on ACK and
		// CANCEL.
		return nil
	}
	if missing := unsupportedRequire(req); len(missing) > 0 {
		return &refusal{status: 420, reason: "Bad Extension", headers: []sip.Header{sip.NewHeader("Unsupported", strings.Join(missing, ", "))}}
	}
	return nil
}

// unsupportedRequire lists the option tags of the request's Require
// headers that supportedOptions lacks. Proxy-Require is for proxies and
// ignored here (RFC 3261 section 8.2.2.3).
func unsupportedRequire(req *sip.Request) []string {
	var missing []string
	for _, h := range req.GetHeaders("Require") {
		for _, tag := range strings.Split(h.Value(), ",") {
			tag = strings.TrimSpace(tag)
			if tag != "" && !supportsOption(tag) {
				missing = append(missing, tag)
			}
		}
	}
	return missing
}

func supportsOption(tag string) bool {
	for _, t := range supportedOptions {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

// supportedHeader is the Supported header advertising supportedOptions.
func supportedHeader() sip.Header {
	return sip.NewHeader("Supported", strings.Join(supportedOptions, ", "))
}
