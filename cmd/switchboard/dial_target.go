package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// defaultSIPPort is used when the target URI has no port (RFC 3261 §19.1.2).
const defaultSIPPort = 5060

var errBadTarget = errors.New("bad target")

// dialTarget is the parsed `switchboard dial` target:
// sip:USER@HOST[:PORT][;transport=udp|tcp].
type dialTarget struct {
	User      string
	Host      string
	Port      int
	Transport string // "" when the URI has no transport parameter
}

// URI is the Request-URI the call is sent to (without parameters; the
// transport is passed separately).
func (t dialTarget) URI() string {
	return "sip:" + t.User + "@" + t.HostPort()
}

// HostPort joins host and port, bracketing IPv6 addresses.
func (t dialTarget) HostPort() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// parseDialTarget reads sip:user@host[:port][;params][?headers]; the
// "sip:" scheme may be left out. sips: is refused (no TLS transport).
func parseDialTarget(s string) (dialTarget, error) {
	var t dialTarget
	rest := strings.TrimSpace(s)
	switch lower := strings.ToLower(rest); {
	case strings.HasPrefix(lower, "sips:"):
		return t, fmt.Errorf("%w %q: sips (TLS) is not supported; use sip: with ;transport=udp or tcp", errBadTarget, s)
	case strings.HasPrefix(lower, "sip:"):
		rest = rest[4:]
	case strings.Contains(lower, "://") || strings.HasPrefix(lower, "tel:"):
		return t, fmt.Errorf("%w %q: want sip:NUMBER@HOST[:PORT]", errBadTarget, s)
	}
	rest, _, _ = strings.Cut(rest, "?") // URI headers are not used
	at := strings.LastIndex(rest, "@")
	if at <= 0 {
		return t, fmt.Errorf("%w %q: no number before @ (want sip:NUMBER@HOST[:PORT])", errBadTarget, s)
	}
	t.User, rest = rest[:at], rest[at+1:]
	if strings.ContainsAny(t.User, " ;:<>\"") {
		return t, fmt.Errorf("%w %q: bad user part %q", errBadTarget, s, t.User)
	}
	hostport, params, _ := strings.Cut(rest, ";")
	for p := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "transport") {
			continue // user=phone and the like
		}
		switch v = strings.ToLower(strings.TrimSpace(v)); v {
		case "udp", "tcp":
			t.Transport = v
		default:
			return t, fmt.Errorf("%w %q: transport %q not supported (udp or tcp)", errBadTarget, s, v)
		}
	}
	t.Port = defaultSIPPort
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return t, fmt.Errorf("%w %q: bad port %q", errBadTarget, s, p)
		}
		t.Host, t.Port = h, port
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		t.Host = hostport[1 : len(hostport)-1]
	} else if strings.Contains(hostport, ":") {
		return t, fmt.Errorf("%w %q: bad host %q (an IPv6 address goes in brackets: [::1]:5060)", errBadTarget, s, hostport)
	} else {
		t.Host = hostport
	}
	if t.Host == "" || strings.ContainsAny(t.Host, "[]/ ") {
		return t, fmt.Errorf("%w %q: bad host %q", errBadTarget, s, hostport)
	}
	if strings.Contains(t.Host, ":") {
		if _, err := netip.ParseAddr(t.Host); err != nil {
			return t, fmt.Errorf("%w %q: bad host %q", errBadTarget, s, hostport)
		}
	}
	return t, nil
}

// localIPToward returns the local address the kernel picks to reach
// host:port (a connected UDP socket sends nothing).
func localIPToward(hostport string) (netip.Addr, error) {
	c, err := net.Dial("udp", hostport)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("no route to %s: %w", hostport, err)
	}
	defer c.Close()
	ua, ok := c.LocalAddr().(*net.UDPAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("no route to %s", hostport)
	}
	return ua.AddrPort().Addr().Unmap(), nil
}

// parsePortRange reads "MIN-MAX".
func parsePortRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || lo <= 0 || hi > 65535 || hi <= lo {
		return 0, 0, fmt.Errorf("bad port range %q: want MIN-MAX, e.g. 30000-30999", s)
	}
	return lo, hi, nil
}
