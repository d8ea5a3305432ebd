package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenAddress means a webhook or tool URL names, or resolves to, an
// address the appliance does not send requests to: link-local and cloud
// metadata addresses, where a URL supplied through the API could read the
// host's credentials (server-side request forgery).
var ErrForbiddenAddress = errors.New("link-local and cloud metadata addresses are not allowed")

// forbidden are the ranges no webhook or tool request reaches unless the
// AddressPolicy allows them. Loopback and private networks stay reachable:
// tools and webhooks often run on the appliance itself or beside it.
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),     // IPv4 link-local: AWS, GCP, Azure, OpenStack, Oracle metadata (169.254.169.254), ECS (169.254.170.2)
	netip.MustParsePrefix("fe80::/10"),          // IPv6 link-local
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6
	netip.MustParsePrefix("168.63.129.16/32"),   // Azure WireServer
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network": not a destination
	netip.MustParsePrefix("::/128"),             // unspecified
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast
	netip.MustParsePrefix("ff00::/8"),           // multicast
	netip.MustParsePrefix("255.255.255.255/32"), // broadcast
}

// metadataHosts are the names the clouds give their metadata services.
var metadataHosts = map[string]bool{
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"metadata":                   true,
	"instance-data":              true,
	"instance-data.ec2.internal": true,
}

// nat64 is the well-known NAT64 prefix (RFC 6052): its last 32 bits are an
// IPv4 address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// AddressPolicy says which addresses webhook and tool requests may reach.
// The zero value forbids the link-local, cloud metadata, multicast and
// unspecified addresses and allows everything else, loopback and private
// networks included; Allow reopens chosen prefixes (setting
// webhooks.allow_addresses).
//
// It is applied twice: to the URL when it is stored (CheckURL: a literal
// address, in any of the spellings a resolver accepts, or a metadata host
// name), and to every connection when a request is sent (Control, on the
// address the name resolved to), so a name that resolves to a forbidden
// address, or changes to one later, is refused too.
type AddressPolicy struct {
	// Allow lists prefixes that may be reached although forbidden.
	Allow []netip.Prefix
	// Resolver resolves the names of URLs (default: the system's).
	Resolver *net.Resolver
}

// ParseAddressPolicy reads the allowed prefixes: CIDRs or single addresses.
func ParseAddressPolicy(allow []string) (AddressPolicy, error) {
	var p AddressPolicy
	for _, s := range allow {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if pfx, err := netip.ParsePrefix(s); err == nil {
			p.Allow = append(p.Allow, pfx.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return AddressPolicy{}, fmt.Errorf("%q is not an address or a CIDR", s)
		}
		p.Allow = append(p.Allow, netip.PrefixFrom(a, a.BitLen()))
	}
	return p, nil
}

// CheckAddr refuses a forbidden address, with ErrForbiddenAddress. IPv4
// addresses written as IPv6 (mapped, NAT64) are checked as IPv4.
func (p AddressPolicy) CheckAddr(a netip.Addr) error {
	a = a.WithZone("")
	for _, v := range []netip.Addr{a, embeddedIPv4(a)} {
		if !v.IsValid() {
			continue
		}
		for _, allowed := range p.Allow {
			if allowed.Contains(v) {
				return nil
			}
		}
		for _, f := range forbidden {
			if f.Contains(v) {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, a)
			}
		}
	}
	return nil
}

// embeddedIPv4 is the IPv4 address an IPv6 address carries (mapped,
// IPv4-compatible, NAT64), or the zero Addr.
func embeddedIPv4(a netip.Addr) netip.Addr {
	if !a.Is6() {
		return netip.Addr{}
	}
	if a.Is4In6() {
		return a.Unmap()
	}
	b := a.As16()
	// IPv4-compatible (::a.b.c.d, deprecated); ::1 and :: are not.
	compat := b[12] != 0
	for _, x := range b[:12] {
		compat = compat && x == 0
	}
	if compat || nat64.Contains(a) {
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	return netip.Addr{}
}

// CheckURL refuses a URL whose host is a forbidden address (in any
// spelling: dotted, decimal, octal, hex, bracketed IPv6 with a zone) or a
// cloud metadata host name. A name is checked again, resolved, by Control
// when a request is sent.
func (p AddressPolicy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("parse url: %w", err)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if a, ok := parseHostAddr(host); ok {
		return p.CheckAddr(a)
	}
	if metadataHosts[host] {
		allowed := false
		for _, pfx := range p.Allow {
			allowed = allowed || pfx.Contains(netip.MustParseAddr("169.254.169.254"))
		}
		if !allowed {
			return fmt.Errorf("%w: %s", ErrForbiddenAddress, host)
		}
	}
	return nil
}

// parseHostAddr reads host as an address the way resolvers do: IPv6
// (with a zone), dotted IPv4, and the inet_aton forms (one to four parts,
// each decimal, octal with a leading 0, or hex with 0x) that getaddrinfo
// accepts, such as 2852039166 or 0xA9.0xFE.0xA9.0xFE.
func parseHostAddr(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, s := range parts {
		if s == "" {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(s, 0, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// The last part fills the bytes the others leave.
	var n uint64
	last := len(vals) - 1
	for i, v := range vals[:last] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// Control is a net.Dialer Control hook: it refuses a connection to a
// forbidden address, after name resolution, before anything is sent.
func (p AddressPolicy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unreadable address %q", ErrForbiddenAddress, address)
	}
	return p.CheckAddr(ap.Addr())
}

// Transport returns an HTTP transport whose every connection passes
// Control. With a proxy from the environment the connection is to the
// proxy, which must apply its own policy.
func (p AddressPolicy) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: p.Control, Resolver: p.Resolver}
	tr.DialContext = d.DialContext
	return tr
}
