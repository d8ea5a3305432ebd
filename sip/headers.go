package sip

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/emiago/sipgo/sip"
)

// Limits of the headers a request of the API asks the appliance to send
// (CheckHeaders); a value is at most MaxHeaderValue bytes.
const (
	// MaxHeaders is how many headers one request may add.
	MaxHeaders = 20
	// MaxHeadersBytes bounds their names and values together.
	MaxHeadersBytes = 8 << 10
	// maxHeaderName bounds a header's name.
	maxHeaderName = 64
	// maxReasonText bounds the text of a hangup's Reason.
	maxReasonText = 256
)

// reservedHeaders are the headers the API may not set, and why: the
// dialog's and the transaction's own (changing them breaks the call),
// the message body's, authentication, the extensions the appliance
// negotiates itself, and those a request of its own carries.
var reservedHeaders = func() map[string]string {
	m := map[string]string{}
	add := func(why string, names ...string) {
		for _, n := range names {
			m[strings.ToLower(n)] = why
		}
	}
	add("it identifies or routes the dialog", "Via", "From", "To", "Call-ID", "CSeq", "Contact", "Route",
		"Record-Route", "Max-Forwards", "Path", "Service-Route", "Replaces", "Join", "Target-Dialog")
	add("it describes the message body", "Content-Type", "Content-Length", "Content-Encoding",
		"Content-Disposition", "Content-Language", "Content-ID", "MIME-Version", "Accept", "Accept-Encoding", "Accept-Language")
	add("it carries credentials", "Authorization", "Proxy-Authorization", "WWW-Authenticate",
		"Proxy-Authenticate", "Authentication-Info", "Security-Client", "Security-Server", "Security-Verify")
	add("the appliance negotiates it", "Require", "Proxy-Require", "Supported", "Unsupported", "Allow",
		"Allow-Events", "Session-Expires", "Min-SE", "RSeq", "RAck", "Event", "Subscription-State", "Expires",
		"Min-Expires", "Refer-To", "Referred-By", "Refer-Sub", "User-Agent", "Server", "Timestamp")
	add("set it with the reason field", "Reason")
	return m
}()

// HeaderError says which header of a request is refused and why.
type HeaderError struct {
	// Name is the refused header ("" when the set as a whole is).
	Name    string
	Problem string
}

func (e *HeaderError) Error() string {
	if e.Name == "" {
		return "headers: " + e.Problem
	}
	return "header " + e.Name + ": " + e.Problem
}

// Param is the API field of the refused header under field ("headers"):
// headers.X-Foo.
func (e *HeaderError) Param(field string) string {
	if e.Name == "" {
		return field
	}
	return field + "." + e.Name
}

// CheckHeaders validates the headers a request of the API asks the
// appliance to add to a SIP request it sends (the INVITE of a placed
// call, a REFER): each name a token (RFC 3261) of at most 64 characters,
// not a compact form and not one the dialog or the appliance owns; each
// value one line of UTF-8 without control characters, 1 to
// MaxHeaderValue bytes; at most MaxHeaders of them and MaxHeadersBytes
// in all; no name twice (whatever its case). It returns them sorted by
// name, values trimmed. The error is a *HeaderError.
func CheckHeaders(m map[string]string) ([]Header, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if len(m) > MaxHeaders {
		return nil, &HeaderError{Problem: fmt.Sprintf("at most %d headers", MaxHeaders)}
	}
	out := make([]Header, 0, len(m))
	seen := map[string]bool{}
	total := 0
	for name, value := range m {
		h, err := checkHeader(name, value)
		if err != nil {
			return nil, err
		}
		l := strings.ToLower(name)
		if seen[l] {
			return nil, &HeaderError{Name: name, Problem: "given twice (header names are case-insensitive)"}
		}
		seen[l] = true
		total += len(h.Name) + len(h.Value)
		out = append(out, h)
	}
	if total > MaxHeadersBytes {
		return nil, &HeaderError{Problem: fmt.Sprintf("more than %d bytes of names and values", MaxHeadersBytes)}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DecodeHeaders reads the headers field of an API request, a JSON object
// of names to strings (absent or null: none), and checks it with
// CheckHeaders. The error is a *HeaderError.
func DecodeHeaders(raw json.RawMessage) ([]Header, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, &HeaderError{Problem: "headers must be an object of header names to strings"}
	}
	m := make(map[string]string, len(fields))
	for name, v := range fields {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, &HeaderError{Name: name, Problem: "a header's value must be a string"}
		}
		m[name] = s
	}
	return CheckHeaders(m)
}

// checkHeader validates one header of CheckHeaders.
func checkHeader(name, value string) (Header, error) {
	fail := func(format string, a ...any) (Header, error) {
		return Header{}, &HeaderError{Name: name, Problem: fmt.Sprintf(format, a...)}
	}
	switch {
	case !isToken(name) || len(name) > maxHeaderName:
		return fail("a header name is 1 to %d letters, digits or -.!%%*_+`'~", maxHeaderName)
	case len(name) == 1:
		return fail("compact header names are not accepted: use the long form")
	case reservedHeaders[strings.ToLower(name)] != "":
		return fail("the appliance sets this header: %s", reservedHeaders[strings.ToLower(name)])
	case strings.HasPrefix(strings.ToLower(name), "content-"):
		return fail("the appliance sets this header: it describes the message body")
	}
	value = strings.TrimSpace(value)
	switch {
	case value == "":
		return fail("the value is empty")
	case len(value) > MaxHeaderValue:
		return fail("the value is longer than %d bytes", MaxHeaderValue)
	case !utf8.ValidString(value):
		return fail("the value is not valid UTF-8")
	case hasControl(value):
		return fail("the value holds a line break or another control character")
	}
	return Header{Name: name, Value: value}, nil
}

// hasControl reports a control character other than a tab (CR, LF and
// NUL among them): they would end the header, or the message.
func hasControl(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return true
		}
	}
	return false
}

// sipHeaders are hs as sipgo headers.
func sipHeaders(hs []Header) []sip.Header {
	out := make([]sip.Header, 0, len(hs))
	for _, h := range hs {
		out = append(out, sip.NewHeader(h.Name, h.Value))
	}
	return out
}

// byeHeaders are the headers of a BYE the appliance sends: its Reason
// with text, unless headers bring their own, and headers.
func byeHeaders(text string, headers []Header) []sip.Header {
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Reason") {
			return sipHeaders(headers)
		}
	}
	return append([]sip.Header{reasonHeader("SIP", 200, text)}, sipHeaders(headers)...)
}

// ReasonValue is the value of the Reason header (RFC 3326) a hangup sends
// for reason, as an API request gives it: a reason value
// (Q.850;cause=16;text="Normal call clearing", SIP;cause=480;text="…"),
// checked and written in its canonical form; or a plain sentence, sent as
// SIP;cause=200;text="…". Its text is at most 256 bytes.
func ReasonValue(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", fmt.Errorf("the reason is empty")
	case len(reason) > MaxHeaderValue:
		return "", fmt.Errorf("the reason is longer than %d bytes", MaxHeaderValue)
	case !utf8.ValidString(reason) || hasControl(reason):
		return "", fmt.Errorf("the reason holds a line break or another control character")
	}
	proto, rest, ok := strings.Cut(reason, ";")
	proto = strings.TrimSpace(proto)
	if !ok || !(strings.EqualFold(proto, "SIP") || strings.EqualFold(proto, "Q.850")) {
		if len(reason) > maxReasonText {
			return "", fmt.Errorf("the reason's text is longer than %d bytes", maxReasonText)
		}
		return "SIP;cause=200;text=" + quote(reason), nil
	}
	proto = strings.ToUpper(proto)
	params, err := reasonParams(rest)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(proto)
	cause, hasCause := "", false
	for _, p := range params {
		switch strings.ToLower(p.name) {
		case "cause":
			n, err := strconv.Atoi(p.value)
			lo, hi := 100, 699
			if proto == "Q.850" {
				lo, hi = 1, 127
			}
			if err != nil || n < lo || n > hi || p.quoted {
				return "", fmt.Errorf("the %s cause must be a number from %d to %d", proto, lo, hi)
			}
			cause, hasCause = strconv.Itoa(n), true
		case "text":
			if len(p.value) > maxReasonText {
				return "", fmt.Errorf("the reason's text is longer than %d bytes", maxReasonText)
			}
		}
	}
	if !hasCause {
		return "", fmt.Errorf("a %s reason needs a cause (RFC 3326): %s;cause=…", proto, proto)
	}
	b.WriteString(";cause=" + cause)
	for _, p := range params {
		switch l := strings.ToLower(p.name); {
		case l == "cause":
		case l == "text" || p.quoted:
			b.WriteString(";" + l + "=" + quote(p.value))
		default:
			b.WriteString(";" + l + "=" + p.value)
		}
	}
	return b.String(), nil
}

// reasonParam is one parameter of a reason value.
type reasonParam struct {
	name, value string
	quoted      bool
}

// reasonParams reads ;-separated name=value parameters whose values are
// tokens or quoted strings (RFC 3261 section 25.1).
func reasonParams(s string) ([]reasonParam, error) {
	var out []reasonParam
	for s = strings.TrimSpace(s); s != ""; {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("reason parameter %q has no value", s)
		}
		name := strings.TrimSpace(s[:eq])
		if !isToken(name) {
			return nil, fmt.Errorf("reason parameter %q is not a token", name)
		}
		s = strings.TrimSpace(s[eq+1:])
		p := reasonParam{name: name}
		if strings.HasPrefix(s, `"`) {
			v, n, err := unquote(s)
			if err != nil {
				return nil, err
			}
			p.value, p.quoted, s = v, true, strings.TrimSpace(s[n:])
		} else {
			end := strings.IndexByte(s, ';')
			if end < 0 {
				end = len(s)
			}
			p.value, s = strings.TrimSpace(s[:end]), s[end:]
			if !isToken(p.value) {
				return nil, fmt.Errorf("reason parameter %s: %q is not a token; quote it", name, p.value)
			}
		}
		out = append(out, p)
		if s == "" {
			break
		}
		if s[0] != ';' {
			return nil, fmt.Errorf("reason parameters are separated by ;")
		}
		s = strings.TrimSpace(s[1:])
	}
	return out, nil
}

// unquote reads the quoted string that starts s and returns its text and
// length.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", 0, fmt.Errorf("unterminated quoted string")
			}
			i++
			b.WriteByte(s[i])
		case '"':
			return b.String(), i + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted string")
}

// quote writes s as a quoted string (RFC 3261 section 25.1).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
