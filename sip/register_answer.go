package sip

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/icholy/digest"
)

// What a registration reads in the registrar's answers: the address it
// saw (RFC 3581), the interval it granted, its Min-Expires, a stale
// nonce.

// learnPublic reads the address the registrar saw a UDP REGISTER come
// from (Via received and rport); when the server has no configured
// public address and it differs from our Contact, the contact moves
// there and the old one is returned, to be removed.
func (r *Registration) learnPublic(res *sip.Response) (old *sip.ContactHeader, moved bool) {
	if r.transport != "UDP" || r.srv.opts.PublicAddr != "" {
		return nil, false
	}
	v := res.Via()
	if v == nil {
		return nil, false
	}
	recv, _ := v.Params.Get("received")
	rport, _ := v.Params.Get("rport")
	ip, err := netip.ParseAddr(recv)
	port, perr := strconv.Atoi(rport)
	if err != nil || perr != nil || port <= 0 || port > 65535 {
		return nil, false
	}
	seen := netip.AddrPortFrom(ip.Unmap(), uint16(port))
	cur := r.contact()
	if curIP, err := netip.ParseAddr(cur.Address.Host); err == nil && netip.AddrPortFrom(curIP.Unmap(), uint16(cur.Address.Port)) == seen {
		return nil, false
	}
	r.mu.Lock()
	r.public = seen
	r.mu.Unlock()
	r.log.Info().Str("contact", cur.Address.String()).Str("public", seen.String()).Msg("registrar sees another address: moving the contact there")
	return &cur, true
}

// granted is the interval the registrar gave our contact: its Contact's
// expires parameter, else the Expires header, else what we asked for.
func (r *Registration) granted(res *sip.Response, asked time.Duration) time.Duration {
	ours := r.contact().Address
	for _, h := range res.GetHeaders("Contact") {
		c, ok := h.(*sip.ContactHeader)
		if !ok {
			var parsed sip.ContactHeader
			if _, err := sip.ParseAddressValue(h.Value(), &parsed.Address, &parsed.Params); err != nil {
				continue
			}
			c = &parsed
		}
		if c.Address.User != ours.User || !strings.EqualFold(c.Address.Host, ours.Host) || c.Address.Port != ours.Port {
			continue
		}
		if v, ok := c.Params.Get("expires"); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return time.Duration(n) * time.Second
			}
		}
	}
	if h := res.GetHeader("Expires"); h != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(h.Value())); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
	}
	return asked
}

// minExpires is a 423's Min-Expires (0 when absent or malformed).
func minExpires(res *sip.Response) time.Duration {
	h := res.GetHeader("Min-Expires")
	if h == nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(h.Value()))
	if err != nil || n <= 0 || n > 1<<20 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// staleChallenge reports whether a 401/407 says our nonce was merely
// stale (RFC 7616 section 3.3): the credentials were right.
func staleChallenge(res *sip.Response) bool {
	for _, name := range []string{"WWW-Authenticate", "Proxy-Authenticate"} {
		for _, h := range res.GetHeaders(name) {
			if c, err := digest.ParseChallenge(h.Value()); err == nil && c.Stale {
				return true
			}
		}
	}
	return false
}
