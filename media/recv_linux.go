//go:build linux

package media

import (
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// rxSocket reads a session's UDP socket without blocking and without
// allocating: recvmsg(2) with MSG_DONTWAIT on the socket's descriptor
// (through syscall.RawConn, so Go's poller still owns it), the source
// address decoded from the raw sockaddr, and the kernel's receive time
// (SO_TIMESTAMPNS), so a packet read at the next frame tick keeps the time
// it really arrived (RFC 3550 jitter, latching).
type rxSocket struct {
	rc  syscall.RawConn
	buf []byte

	oob  [64]byte
	from syscall.RawSockaddrAny
	iov  syscall.Iovec
	msg  syscall.Msghdr
	fn   func(fd uintptr) bool
	n    int
	errn syscall.Errno
}

func newRxSocket(c *net.UDPConn, size int) *rxSocket {
	r := &rxSocket{buf: make([]byte, size)}
	r.fn = r.recv
	if rc, err := c.SyscallConn(); err == nil {
		r.rc = rc
		_ = rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		})
	}
	return r
}

func (r *rxSocket) recv(fd uintptr) bool {
	r.iov.Base = &r.buf[0]
	r.iov.SetLen(len(r.buf))
	r.msg = syscall.Msghdr{Name: (*byte)(unsafe.Pointer(&r.from)), Namelen: uint32(syscall.SizeofSockaddrAny),
		Iov: &r.iov, Iovlen: 1, Control: &r.oob[0]}
	r.msg.SetControllen(len(r.oob))
	n, _, e := syscall.Syscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), syscall.MSG_DONTWAIT)
	r.n, r.errn = int(n), e
	return true // never wait: the frame tick comes back
}

// read returns the next queued datagram (valid until the next read), its
// source and when it arrived (the kernel's time, else now); ok is false
// when nothing is queued or the socket is closed.
func (r *rxSocket) read(now time.Time) (pkt []byte, src netip.AddrPort, at time.Time, ok bool) {
	if r.rc == nil {
		return nil, src, now, false
	}
	for {
		if err := r.rc.Read(r.fn); err != nil { // closed
			return nil, src, now, false
		}
		switch r.errn {
		case 0:
		case syscall.EINTR, syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH:
			continue // e.g. an ICMP port unreachable reported on the socket
		default: // EAGAIN: drained
			return nil, src, now, false
		}
		return r.buf[:r.n], r.source(), r.stamp(now), true
	}
}

func (r *rxSocket) source() netip.AddrPort {
	switch r.from.Addr.Family {
	case syscall.AF_INET:
		sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&r.from))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case syscall.AF_INET6:
		sa := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&r.from))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

// stamp turns the kernel's receive time into the session's clock: now
// minus the packet's age on the wall clock (so an injected clock works).
func (r *rxSocket) stamp(now time.Time) time.Time {
	oob := r.oob[:r.msg.Controllen]
	for len(oob) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < syscall.SizeofCmsghdr || int(h.Len) > len(oob) {
			break
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && int(h.Len) >= syscall.CmsgLen(int(unsafe.Sizeof(syscall.Timespec{}))) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&oob[syscall.CmsgLen(0)]))
			if age := time.Since(time.Unix(ts.Unix())); age > 0 {
				return now.Add(-age)
			}
			return now
		}
		oob = oob[min(syscall.CmsgSpace(int(h.Len)-syscall.CmsgLen(0)), len(oob)):]
	}
	return now
}
