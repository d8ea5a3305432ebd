package sip

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// Errors of an outbound trunk's URI and of a call's target.
var (
	errTrunkURI  = errors.New("sip: not a trunk URI")
	errTargetURI = errors.New("sip: not a call target")
)

// maxURILen bounds a trunk or target URI (and so the INVITE's
// Request-URI): far beyond any real one, far below a datagram.
const maxURILen = 512

// TrunkTransports are the transports an outbound trunk may name in its
// transport parameter (UDP when it names none).
var TrunkTransports = []string{"udp", "tcp", "tls"}

// CheckTrunkURI checks an outbound trunk's URI: sip:host[:port] with an
// optional transport parameter (udp, tcp or tls), or sips:host[:port]
// (TLS), and no user part (the called
// number becomes the user part of each call's Request-URI). It returns
// the host, for the caller's address policy.
func CheckTrunkURI(s string) (host string, err error) {
	u, err := parseURI(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errTrunkURI, err)
	}
	if u.User != "" {
		return "", fmt.Errorf("%w: %q has a user part; the called number becomes the user part of each call", errTrunkURI, s)
	}
	return u.Host, nil
}

// CheckTargetURI checks a SIP URI that a call may be placed to directly
// (sip:user@host[:port], an optional transport parameter) and returns its
// host, for the caller's address policy.
func CheckTargetURI(s string) (host string, err error) {
	u, err := parseURI(s)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errTargetURI, err)
	}
	if u.User == "" {
		return "", fmt.Errorf("%w: %q names no user", errTargetURI, s)
	}
	if !userRE(u.User) {
		return "", fmt.Errorf("%w: the user part of %q is not a SIP user", errTargetURI, s)
	}
	return u.Host, nil
}

// TrunkTarget is the Request-URI of a call to the user to (an E.164
// number) through the trunk URI trunk (checked by CheckTrunkURI).
func TrunkTarget(trunk, to string) (string, error) {
	u, err := parseURI(trunk)
	if err != nil {
		return "", err
	}
	u.User = to
	return u.String(), nil
}

func parseURI(s string) (sip.Uri, error) {
	var u sip.Uri
	if len(s) > maxURILen {
		return u, fmt.Errorf("longer than %d characters", maxURILen)
	}
	if strings.ContainsAny(s, " \t\r\n<>\"") {
		return u, errors.New("spaces, quotes or angle brackets")
	}
	sips := strings.HasPrefix(strings.ToLower(s), "sips:")
	if !sips && !strings.HasPrefix(strings.ToLower(s), "sip:") {
		return u, errors.New("not a sip: or sips: URI")
	}
	if err := sip.ParseUri(s, &u); err != nil {
		return u, err
	}
	if u.Host == "" || strings.ContainsAny(u.Host, "/?#") {
		return u, errors.New("no host")
	}
	if u.Port < 0 || u.Port > 65535 {
		return u, errors.New("port out of range")
	}
	if len(u.Headers) > 0 || u.Password != "" {
		return u, errors.New("URI headers and passwords are not allowed")
	}
	if tr, ok := u.UriParams.Get("transport"); ok {
		if !isTrunkTransport(tr) {
			return u, fmt.Errorf("transport %q is not one of %v", tr, TrunkTransports)
		}
		if sips && !strings.EqualFold(tr, "tls") {
			return u, fmt.Errorf("a sips: URI goes over TLS, not %s", tr)
		}
	}
	return u, nil
}

func isTrunkTransport(tr string) bool {
	for _, t := range TrunkTransports {
		if strings.EqualFold(t, tr) {
			return true
		}
	}
	return false
}

// userRE reports whether s is the user production of RFC 3261 (25.1).
func userRE(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_.!~*'()&=+$,;?/%", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

// hostPort is the address to send a URI's requests to: its host and its
// port, 5060 when it names none.
func hostPort(u sip.Uri) string {
	port := u.Port
	if port == 0 {
		port = 5060
	}
	return net.JoinHostPort(strings.Trim(u.Host, "[]"), strconv.Itoa(port))
}
