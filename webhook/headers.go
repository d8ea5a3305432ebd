package webhook

// incomingHeaderNames are the INVITE headers copied into sip_headers, in
// the order they are listed: the dialog identifiers, then the identity
// headers a PBX or carrier sends (RFC 3325 asserted and preferred
// identity, the pre-standard Remote-Party-ID, RFC 5806 Diversion, RFC 7044
// History-Info, RFC 8224 Identity), then what PBXs use to pass their own
// data along.
var incomingHeaderNames = [...]string{
	"From",
	"To",
	"Call-ID",
	"P-Asserted-Identity",
	"P-Preferred-Identity",
	"Remote-Party-ID",
	"Diversion",
	"History-Info",
	"Identity",
	"Privacy",
	"Referred-By",
	"User-Agent",
}

// IncomingHeaderNames returns the names of the INVITE headers that belong
// in a realtime.call.incoming event's sip_headers, in order. The slice is
// a fresh copy. Custom X- headers are not included by default; a caller
// that forwards them appends their names.
func IncomingHeaderNames() []string {
	out := make([]string, len(incomingHeaderNames))
	copy(out, incomingHeaderNames[:])
	return out
}

// CollectSIPHeaders builds sip_headers from an INVITE without knowing the
// SIP library: values(name) returns every value of the named header, in
// order of appearance (nil when absent). Headers are listed in the order
// of names, one entry per value. The result is never nil.
func CollectSIPHeaders(names []string, values func(name string) []string) []SIPHeader {
	out := make([]SIPHeader, 0, len(names))
	for _, name := range names {
		for _, v := range values(name) {
			out = append(out, SIPHeader{Name: name, Value: v})
		}
	}
	return out
}
