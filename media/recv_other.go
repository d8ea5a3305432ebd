//go:build !linux

package media

import (
	"net"
	"net/netip"
	"time"
)

// rxSocket reads a session's UDP socket without waiting for a packet:
// outside Linux a read deadline just past now stands in for MSG_DONTWAIT,
// and a packet's arrival is the time it is read.
type rxSocket struct {
	c   *net.UDPConn
	buf []byte
}

func newRxSocket(c *net.UDPConn, size int) *rxSocket {
	return &rxSocket{c: c, buf: make([]byte, size)}
}

// read returns the next queued datagram (valid until the next read), its
// source and when it arrived; ok is false when nothing is queued or the
// socket is closed.
func (r *rxSocket) read(now time.Time) (pkt []byte, src netip.AddrPort, at time.Time, ok bool) {
	_ = r.c.SetReadDeadline(time.Now().Add(20 * time.Microsecond))
	n, src, err := r.c.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		return nil, src, now, false
	}
	return r.buf[:n], netip.AddrPortFrom(src.Addr().Unmap(), src.Port()), now, true
}
