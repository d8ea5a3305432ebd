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
// allocating: recvmmsg(2) with MSG_DONTWAIT on the socket's descriptor
// (through syscall.RawConn, so Go's poller still owns it), up to rxBatch
// datagrams a call, the source address decoded from the raw sockaddr, and
// the kernel's receive time (SO_TIMESTAMPNS), so a packet read at the next
// frame tick keeps the time it really arrived (RFC 3550 jitter, latching).
// A batch that comes back short means the socket is drained: the tick
// makes one system call, not a second one to learn there is nothing more.
type rxSocket struct {
	rc syscall.RawConn

	bufs [rxBatch][]byte
	oob  [rxBatch][64]byte
	from [rxBatch]syscall.RawSockaddrAny
	iov  [rxBatch]syscall.Iovec
	msgs [rxBatch]mmsghdr
	fn   func(fd uintptr) bool
	got  int // datagrams of the last batch
	next int // the next one to hand out
	errn syscall.Errno
	// drained: the last batch was short, so nothing was left behind it.
	drained bool
}

// rxBatch is how many datagrams one recvmmsg takes: a call's socket holds
// one packet per ptime, so two mean "that one, and nothing after it".
const rxBatch = 2

// mmsghdr is struct mmsghdr of recvmmsg(2) (Go pads it as C does).
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
}

func newRxSocket(c *net.UDPConn, size int) *rxSocket {
	r := &rxSocket{}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, size)
	}
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
	for i := range r.msgs {
		r.iov[i].Base = &r.bufs[i][0]
		r.iov[i].SetLen(len(r.bufs[i]))
		r.msgs[i] = mmsghdr{hdr: syscall.Msghdr{Name: (*byte)(unsafe.Pointer(&r.from[i])), Namelen: uint32(syscall.SizeofSockaddrAny),
			Iov: &r.iov[i], Iovlen: 1, Control: &r.oob[i][0]}}
		r.msgs[i].hdr.SetControllen(len(r.oob[i]))
	}
	n, _, e := syscall.Syscall6(syscall.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.msgs[0])), rxBatch, syscall.MSG_DONTWAIT, 0, 0)
	r.got, r.next, r.errn = 0, 0, e
	if e == 0 {
		r.got = int(n)
	}
	return true // never wait: the frame tick comes back
}

// read returns the next queued datagram (valid until the next read), its
// source and when it arrived (the kernel's time, else now); ok is false
// when nothing is queued or the socket is closed.
func (r *rxSocket) read(now time.Time) (pkt []byte, src netip.AddrPort, at time.Time, ok bool) {
	if r.rc == nil {
		return nil, src, now, false
	}
	for r.next >= r.got {
		if r.drained {
			r.drained = false
			return nil, src, now, false
		}
		if err := r.rc.Read(r.fn); err != nil { // closed
			return nil, src, now, false
		}
		switch r.errn {
		case 0:
			r.drained = r.got < rxBatch
		case syscall.EINTR, syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH:
			continue // e.g. an ICMP port unreachable reported on the socket
		default: // EAGAIN: drained
			return nil, src, now, false
		}
	}
	i := r.next
	r.next++
	return r.bufs[i][:r.msgs[i].n], r.source(i), r.stamp(i, now), true
}

func (r *rxSocket) source(i int) netip.AddrPort {
	switch r.from[i].Addr.Family {
	case syscall.AF_INET:
		sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&r.from[i]))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case syscall.AF_INET6:
		sa := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&r.from[i]))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

// stamp turns the kernel's receive time into the session's clock: now
// minus the packet's age on the wall clock (so an injected clock works).
func (r *rxSocket) stamp(i int, now time.Time) time.Time {
	oob := r.oob[i][:min(int(r.msgs[i].hdr.Controllen), len(r.oob[i]))]
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
