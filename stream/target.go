package stream

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"switchboard/call"
	"switchboard/webhook"
)

// Limits of a stream's settings.
const (
	MaxURLLen        = 2048
	MaxAuthTokenLen  = 4096
	MaxParameters    = 32
	MaxParameterName = 128
	MaxParameterLen  = 1024
)

// TargetError is a stream setting that is not usable: Field names it as
// the API does (url, protocol, track, parameters, auth_token), without
// the enclosing object's name.
type TargetError struct {
	Field   string
	Message string
}

func (e *TargetError) Error() string { return e.Field + ": " + e.Message }

func bad(field, format string, args ...any) *TargetError {
	return &TargetError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// CheckTarget fills t's defaults (protocol twilio, track inbound) and
// checks it: the URL's scheme fits the protocol (ws:// or wss:// for
// twilio, tcp://host:port for audiosocket) and names no address the
// policy forbids, the track is one the protocol carries, the parameters
// and the token are within their limits.
func CheckTarget(t *call.StreamTarget, policy webhook.AddressPolicy) *TargetError {
	if t.Protocol == "" {
		t.Protocol = ProtocolTwilio
	}
	if t.Track == "" {
		t.Track = TrackInbound
	}
	switch t.Protocol {
	case ProtocolTwilio, ProtocolAudioSocket:
	default:
		return bad("protocol", "protocol must be %s or %s", ProtocolTwilio, ProtocolAudioSocket)
	}
	switch t.Track {
	case TrackInbound:
	case TrackBoth:
		if t.Protocol == ProtocolAudioSocket {
			return bad("track", "an audiosocket stream carries one track: inbound")
		}
	default:
		return bad("track", "track must be %s or %s", TrackInbound, TrackBoth)
	}
	if t.URL == "" {
		return bad("url", "url is required")
	}
	if len(t.URL) > MaxURLLen {
		return bad("url", "url is longer than %d characters", MaxURLLen)
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return bad("url", "url must be an absolute URL with a host")
	}
	if u.User != nil {
		return bad("url", "url must not carry credentials: use auth_token")
	}
	switch {
	case t.Protocol == ProtocolTwilio && u.Scheme != "ws" && u.Scheme != "wss":
		return bad("url", "a twilio stream's url is ws:// or wss://")
	case t.Protocol == ProtocolAudioSocket && u.Scheme != "tcp":
		return bad("url", "an audiosocket stream's url is tcp://host:port")
	case t.Protocol == ProtocolAudioSocket && u.Port() == "":
		return bad("url", "an audiosocket stream's url names its port (tcp://host:port)")
	case t.Protocol == ProtocolAudioSocket && (u.Path != "" || u.RawQuery != ""):
		return bad("url", "an audiosocket stream's url is tcp://host:port, without a path")
	}
	if err := policy.CheckURL(t.URL); err != nil {
		return bad("url", "url must not name a link-local or cloud metadata address (%v)", err)
	}
	if len(t.Parameters) > MaxParameters {
		return bad("parameters", "at most %d parameters", MaxParameters)
	}
	if len(t.Parameters) > 0 && t.Protocol == ProtocolAudioSocket {
		return bad("parameters", "an audiosocket stream has no parameters (only the call's UUID goes to the bot)")
	}
	for k, v := range t.Parameters {
		switch {
		case k == "" || len(k) > MaxParameterName || !utf8.ValidString(k) || hasControl(k):
			return bad("parameters", "a parameter's name is 1 to %d printable characters", MaxParameterName)
		case len(v) > MaxParameterLen || !utf8.ValidString(v) || hasControl(v):
			return bad("parameters", "parameter %q: a value is at most %d printable characters", k, MaxParameterLen)
		}
	}
	if len(t.AuthToken) > MaxAuthTokenLen || hasControl(t.AuthToken) {
		return bad("auth_token", "auth_token is at most %d printable characters", MaxAuthTokenLen)
	}
	if t.AuthToken != "" && t.Protocol == ProtocolAudioSocket {
		return bad("auth_token", "an audiosocket stream has no auth_token (it has no headers)")
	}
	return nil
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
}
