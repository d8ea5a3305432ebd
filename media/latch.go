package media

import (
	"net/netip"
	"time"
)

// Defaults of the source latch.
const (
	// DefaultRelatchAfter is how long the latched source must have been
	// silent before another source (with the same SSRC) may take its place:
	// long enough that a stranger cannot steal a live stream, short enough
	// that a caller whose NAT mapping changed comes back within a breath.
	DefaultRelatchAfter = 1500 * time.Millisecond
	// DefaultNATGrace is how long after our first RTP packet we wait for
	// the peer's packets from the address its SDP names before taking the
	// first source that sends the call's payload type (a peer behind a NAT
	// that wrote a public but wrong address into its SDP).
	DefaultNATGrace = time.Second
)

// LatchReason says why the latch took a source.
type LatchReason uint8

// Latch outcomes of sourceLatch.check.
const (
	latchKeep     LatchReason = iota // from the latched source: accept
	latchStranger                    // from anyone else: drop
	LatchSDP                         // first packet from the address the SDP names
	LatchNAT                         // first packet of the call's payload type, the SDP address being private or silent
	LatchSilence                     // the latched source fell silent and this one carries its SSRC
)

// String names a reason for logs.
func (r LatchReason) String() string {
	switch r {
	case LatchSDP:
		return "sdp"
	case LatchNAT:
		return "nat"
	case LatchSilence:
		return "silence"
	case latchStranger:
		return "stranger"
	}
	return "keep"
}

// sourceLatch decides which source address may steer a call's RTP
// (symmetric RTP, RFC 4961, hardened against strangers):
//
//   - the address the SDP names is latched on its first packet;
//   - a peer behind a NAT sends from another address: when the SDP names
//     an address that cannot be the packets' source (private, link-local,
//     shared CGNAT space, none), or nothing came from it for NATGrace after
//     we started sending, the first source that sends the call's payload
//     type is latched. Before we sent anything nobody legitimate knows the
//     port (it is in our answer), so no such latch happens then. With no
//     SDP address at all (nothing to send to) the first such source wins;
//   - once latched, another source takes over only when the latched one
//     has been silent for RelatchAfter and the newcomer carries the same
//     SSRC, or when signalling names a new address (reset).
//
// Everything else is a stranger and its packets are dropped. It is pure
// (clock passed in) and allocation-free; the session guards it with its
// mutex.
type sourceLatch struct {
	relatchAfter, natGrace time.Duration

	signalled netip.AddrPort // from the SDP (may be invalid)
	natOK     bool           // signalled cannot be the source: latch by payload type at once
	sendStart time.Time      // our first RTP packet out (zero: none yet)

	latched bool
	from    netip.AddrPort // the latched source as packets show it
	current netip.AddrPort // where to answer it (from, or the SDP's for port 0)
	ssrc    uint32
	last    time.Time // last packet from current
}

func newSourceLatch(relatchAfter, natGrace time.Duration) sourceLatch {
	if relatchAfter <= 0 {
		relatchAfter = DefaultRelatchAfter
	}
	if natGrace <= 0 {
		natGrace = DefaultNATGrace
	}
	return sourceLatch{relatchAfter: relatchAfter, natGrace: natGrace}
}

// signal takes the address of a new SDP. A changed address resets the
// latch: signalling may move the stream. It reports whether it changed.
func (l *sourceLatch) signal(ap netip.AddrPort) bool {
	if ap == l.signalled {
		return false
	}
	l.signalled = ap
	l.natOK = !reachable(ap.Addr())
	l.latched = false
	l.from, l.current = netip.AddrPort{}, netip.AddrPort{}
	return true
}

// sent records that we sent RTP at now.
func (l *sourceLatch) sent(now time.Time) {
	if l.sendStart.IsZero() {
		l.sendStart = now
	}
}

// isSignalled reports whether src is the SDP's address. A source port of 0
// (a raw-socket sender such as sipp's pcap playback: it cannot be answered,
// RFC 768) from the SDP's host counts as that address.
func (l *sourceLatch) isSignalled(src netip.AddrPort) bool {
	return src == l.signalled || (src.Port() == 0 && src.Addr() == l.signalled.Addr())
}

// check decides about one RTP packet from src carrying ssrc; expected says
// whether its payload type is one the call negotiated.
func (l *sourceLatch) check(src netip.AddrPort, ssrc uint32, expected bool, now time.Time) LatchReason {
	if l.latched {
		if src == l.from {
			l.ssrc, l.last = ssrc, now
			return latchKeep
		}
		if ssrc != l.ssrc || now.Sub(l.last) < l.relatchAfter || !answerable(src) {
			return latchStranger
		}
		l.from, l.current, l.last = src, src, now
		return LatchSilence
	}
	var why LatchReason
	switch {
	case l.isSignalled(src):
		why = LatchSDP
	case !expected || !answerable(src):
		return latchStranger
	case !l.signalled.IsValid(): // no SDP address: the first sender is the peer
		why = LatchNAT
	case l.sendStart.IsZero():
		return latchStranger
	case l.natOK || now.Sub(l.sendStart) >= l.natGrace:
		why = LatchNAT
	default:
		return latchStranger
	}
	l.latched, l.ssrc, l.last = true, ssrc, now
	l.from, l.current = src, src
	if !answerable(src) { // port 0 from the SDP's host: answer the SDP
		l.current = l.signalled
	}
	return why
}

// rtcpFrom reports whether RTCP from src whose sender SSRC is ssrc belongs
// to the call: once latched, from the latched source's host (its RTCP port
// may differ behind a NAT) and about the latched stream; before, from the
// SDP's address or the port above it (RFC 3550 §11).
func (l *sourceLatch) rtcpFrom(src netip.AddrPort, ssrc uint32) bool {
	if l.latched {
		return src.Addr() == l.current.Addr() && ssrc == l.ssrc
	}
	return l.signalled.IsValid() && src.Addr() == l.signalled.Addr() &&
		(src.Port() == l.signalled.Port() || src.Port() == l.signalled.Port()+1)
}

// answerable reports whether packets can be sent back to src: UDP source
// port 0 means "no reply port" (RFC 768).
func answerable(src netip.AddrPort) bool {
	return src.Port() != 0 && !src.Addr().IsUnspecified()
}

// cgnat is the shared address space of carrier-grade NATs (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// reachable reports whether an SDP address can be where the peer's packets
// come from: not private (RFC 1918, RFC 4193), link-local, CGNAT, or none.
// Loopback counts as reachable (tests and local peers).
func reachable(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !cgnat.Contains(a)
}
