package media

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// PortPool hands out RTP/RTCP socket pairs from a port range: an even RTP
// port and the next odd port for RTCP (RFC 3550 §11), both bound. Ports
// held by other programs are skipped. Allocation rotates through the range
// so a just-released port is not reused at once (late packets of the old
// call would land in the new one). It is safe for concurrent use.
type PortPool struct {
	mu       sync.Mutex
	bind     netip.Addr
	min, max int // even first RTP port, last usable RTCP port
	next     int
	inUse    map[int]bool
	closed   bool
}

// PortPair is one allocated RTP/RTCP socket pair. Release it with Close.
type PortPair struct {
	RTP, RTCP *net.UDPConn
	pool      *PortPool
	port      int
	once      sync.Once
}

// NewPortPool returns a pool over [min, max] on bindIP (the unspecified
// address binds all interfaces). An odd min is rounded up; the range must
// hold at least one pair.
func NewPortPool(bindIP netip.Addr, min, max int) (*PortPool, error) {
	if min%2 != 0 {
		min++
	}
	if min <= 0 || max > 65535 || max < min+1 {
		return nil, fmt.Errorf("new port pool %d-%d: %w", min, max, errBadPortRange)
	}
	if !bindIP.IsValid() {
		bindIP = netip.IPv4Unspecified()
	}
	return &PortPool{bind: bindIP, min: min, max: max, next: min, inUse: map[int]bool{}}, nil
}

// Size returns the number of pairs in the range.
func (p *PortPool) Size() int { return (p.max - p.min + 1) / 2 }

// InUse returns the number of pairs currently allocated.
func (p *PortPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inUse)
}

// Allocate binds the next free pair. It returns ErrPortsExhausted when no
// pair of the range could be bound.
func (p *PortPool) Allocate() (*PortPair, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("allocate rtp port: %w", ErrClosed)
	}
	for range p.Size() {
		port := p.next
		p.next += 2
		if p.next+1 > p.max {
			p.next = p.min
		}
		if p.inUse[port] {
			continue
		}
		rtpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.bind, uint16(port))))
		if err != nil {
			continue // taken by someone else
		}
		rtcpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.bind, uint16(port+1))))
		if err != nil {
			_ = rtpConn.Close()
			continue
		}
		p.inUse[port] = true
		return &PortPair{RTP: rtpConn, RTCP: rtcpConn, pool: p, port: port}, nil
	}
	return nil, fmt.Errorf("allocate rtp port in %d-%d (%d in use): %w", p.min, p.max, len(p.inUse), ErrPortsExhausted)
}

// Close stops further allocation. Pairs already handed out stay valid.
func (p *PortPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

// Port returns the RTP port (RTCP is Port()+1).
func (pp *PortPair) Port() int { return pp.port }

// Close closes both sockets and returns the pair to the pool. It is idempotent.
func (pp *PortPair) Close() error {
	var err error
	pp.once.Do(func() {
		err = joinErr(pp.RTP.Close(), pp.RTCP.Close())
		pp.pool.mu.Lock()
		delete(pp.pool.inUse, pp.port)
		pp.pool.mu.Unlock()
	})
	return err
}

func joinErr(errs ...error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return errors.Join(out...)
}
