package sip

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// DefaultForwardHeaders are the INVITE headers a call keeps (Options.
// ForwardHeaders): the dialog's identity (From, To, Call-ID), what PBXs
// and carriers pass their own data in (X-*, RFC 7433 User-to-User), the
// identity headers (RFC 3325 asserted and preferred identity, the
// pre-standard Remote-Party-ID, RFC 8224 Identity, RFC 3323 Privacy,
// RFC 7044 History-Info, RFC 5806 Diversion, RFC 3892 Referred-By) and
// the caller's User-Agent.
var DefaultForwardHeaders = []string{
	"From", "To", "Call-ID", "X-*", "User-to-User",
	"P-Asserted-Identity", "P-Preferred-Identity", "Remote-Party-ID", "Identity", "Privacy",
	"History-Info", "Diversion", "Referred-By", "User-Agent",
}

// Bounds of what a call keeps of its INVITE's headers: they travel with
// the call into webhooks, agent variables and the record, so a caller
// cannot make a call carry more than this (extra headers are skipped).
const (
	// MaxForwardedHeaders is how many header values a call keeps.
	MaxForwardedHeaders = 32
	// MaxHeaderValue is the longest header value a call keeps or an API
	// request may send (bytes).
	MaxHeaderValue = 1024
	// MaxForwardedBytes bounds the names and values a call keeps.
	MaxForwardedBytes = 8 << 10
)

// neverForwarded are the headers no pattern forwards: they carry a digest
// answer to our challenge.
var neverForwarded = map[string]bool{"authorization": true, "proxy-authorization": true}

// compactNames are the long forms of the compact header names (RFC 3261
// section 7.3.3 and the extensions' registrations) sipgo does not expand.
var compactNames = map[string]string{
	"a": "Accept-Contact", "b": "Referred-By", "c": "Content-Type", "d": "Request-Disposition", "e": "Content-Encoding",
	"f": "From", "i": "Call-ID", "j": "Reject-Contact", "k": "Supported", "l": "Content-Length", "m": "Contact",
	"n": "Identity-Info", "o": "Event", "r": "Refer-To", "s": "Subject", "t": "To", "u": "Allow-Events",
	"v": "Via", "x": "Session-Expires", "y": "Identity",
}

// headerFilter picks the INVITE headers a call keeps: names matched
// case-insensitively, a trailing * matching any name with that prefix.
// Names and prefixes are kept in lower case.
type headerFilter struct {
	exact    map[string]bool
	prefixes [][]byte
}

// newHeaderFilter compiles patterns (Options.ForwardHeaders).
func newHeaderFilter(patterns []string) (headerFilter, error) {
	f := headerFilter{exact: map[string]bool{}}
	for _, p := range patterns {
		name, prefix := strings.CutSuffix(strings.TrimSpace(p), "*")
		if name == "" || !isToken(name) {
			return headerFilter{}, fmt.Errorf("sip forward header %q: a header name, or a name prefix followed by * (X-*)", p)
		}
		if prefix {
			f.prefixes = append(f.prefixes, []byte(strings.ToLower(name)))
		} else {
			f.exact[strings.ToLower(name)] = true
		}
	}
	return f, nil
}

// match reports whether the (long form) header name is kept. It runs for
// every header of every INVITE, so it lowers the name into a buffer on
// the stack rather than a new string.
func (f headerFilter) match(name string) bool {
	var buf [maxHeaderName]byte
	if len(name) > len(buf) {
		return false // no header name we keep is that long
	}
	l := buf[:len(name)]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		l[i] = c
	}
	if neverForwarded[string(l)] {
		return false
	}
	if f.exact[string(l)] {
		return true
	}
	for _, p := range f.prefixes {
		if bytes.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// pick returns the headers of req the filter keeps, in the order they
// appear, one entry per value, names in their long form; at most
// MaxForwardedHeaders values of at most MaxHeaderValue bytes, and
// MaxForwardedBytes in all.
func (f headerFilter) pick(req *sip.Request) []Header {
	var out []Header
	total := 0
	for _, h := range req.Headers() {
		name := h.Name()
		if len(name) == 1 {
			if long, ok := compactNames[strings.ToLower(name)]; ok {
				name = long
			}
		}
		if !f.match(name) {
			continue
		}
		v := h.Value()
		if len(v) > MaxHeaderValue || total+len(name)+len(v) > MaxForwardedBytes || len(out) == MaxForwardedHeaders {
			continue
		}
		total += len(name) + len(v)
		if out == nil {
			out = make([]Header, 0, min(len(req.Headers()), MaxForwardedHeaders))
		}
		out = append(out, Header{Name: name, Value: v})
	}
	return out
}

// isToken reports whether s is a SIP token (RFC 3261 section 25.1), the
// characters of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-.!%*_+`'~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Headers are the INVITE's headers the call keeps (Options.
// ForwardHeaders), chosen once at admission, in the order they came: the
// webhooks, the agent's variables and everything downstream use these.
// A placed call has none. The slice is the call's own: do not modify it.
func (c *Call) Headers() []Header { return c.headers }

// CallerName is the caller's display name: the From header's, else the
// P-Asserted-Identity's (RFC 3325); "" when neither has one. A placed
// call has none.
func (c *Call) CallerName() string {
	if c.placed != nil {
		return ""
	}
	if n := strings.TrimSpace(c.invite.From().DisplayName); n != "" {
		return n
	}
	if h := c.invite.GetHeader("P-Asserted-Identity"); h != nil {
		var u sip.Uri
		params := sip.NewParams()
		if name, err := sip.ParseAddressValue(h.Value(), &u, &params); err == nil {
			return strings.TrimSpace(name)
		}
	}
	return ""
}
