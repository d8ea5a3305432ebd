package media

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// PortPool hands out RTP/RTCP socket pairs from a port range: an even RTP
// port and the next odd port for RTCP (RFC 3550 §11), both bound. Ports
// held by other programs are skipped. Pairs are picked at random, so a
// stranger cannot guess the next call's port from the last one; a pair
// released less than PortCooldown ago is taken only when no other is free
// (late packets of the old call would land in the new one). It is safe
// for concurrent use.
type PortPool struct {
	mu       sync.Mutex
	bind     netip.Addr
	min, max int // even first RTP port, last usable RTCP port
	inUse    map[int]bool
	released map[int]time.Time // recently released pairs
	closed   bool
	now      func() time.Time
}

// PortCooldown is how long a released pair rests before it is preferred
// again: longer than a peer keeps sending after a BYE.
const PortCooldown = 10 * time.Second

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
	return &PortPool{bind: bindIP, min: min, max: max, inUse: map[int]bool{}, released: map[int]time.Time{}, now: time.Now}, nil
}

// Size returns the number of pairs in the range.
func (p *PortPool) Size() int { return (p.max - p.min + 1) / 2 }

// InUse returns the number of pairs currently allocated.
func (p *PortPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inUse)
}

// Allocate binds a free pair picked at random. It returns
// ErrPortsExhausted when no pair of the range could be bound.
func (p *PortPool) Allocate() (*PortPair, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("allocate rtp port: %w", ErrClosed)
	}
	now := p.now()
	for at, t := range p.released {
		if now.Sub(t) >= PortCooldown {
			delete(p.released, at)
		}
	}
	// Two passes over the range from a random pair, in a random stride
	// coprime with the number of pairs (every pair is visited once per
	// pass): rested pairs first, then those released lately.
	n := p.Size()
	start, stride := rand.IntN(n), p.stride(n)
	for pass := range 2 {
		for i := range n {
			port := p.min + 2*((start+i*stride)%n)
			if p.inUse[port] {
				continue
			}
			if _, recent := p.released[port]; recent && pass == 0 {
				continue
			}
			if pp := p.bindPair(port); pp != nil {
				delete(p.released, port)
				return pp, nil
			}
		}
	}
	return nil, fmt.Errorf("allocate rtp port in %d-%d (%d in use): %w", p.min, p.max, len(p.inUse), ErrPortsExhausted)
}

// stride returns a random step in [1, n) coprime with n (1 when n < 3).
func (p *PortPool) stride(n int) int {
	if n < 3 {
		return 1
	}
	for {
		s := 1 + rand.IntN(n-1)
		if gcd(s, n) == 1 {
			return s
		}
	}
}

// bindPair binds port and port+1, or returns nil when either is taken by
// someone else.
func (p *PortPool) bindPair(port int) *PortPair {
	rtpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.bind, uint16(port))))
	if err != nil {
		return nil
	}
	rtcpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.bind, uint16(port+1))))
	if err != nil {
		_ = rtpConn.Close()
		return nil
	}
	p.inUse[port] = true
	return &PortPair{RTP: rtpConn, RTCP: rtcpConn, pool: p, port: port}
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
		pp.pool.released[pp.port] = pp.pool.now()
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
