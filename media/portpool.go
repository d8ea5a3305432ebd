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
// (late packets of the old call would land in the new one), and then the
// one released longest ago. It is safe for concurrent use.
//
// An allocation costs the same whatever the range and the call rate: the
// rested pairs are a set picked from at random, the cooling ones a queue in
// release order (a scan of the range and of the released pairs at each
// allocation was 8% of the appliance's CPU at 1,000 call setups a second).
type PortPool struct {
	mu       sync.Mutex
	bind     netip.Addr
	min, max int // even first RTP port, last usable RTCP port
	// rested holds the free pairs released at least PortCooldown ago (or
	// never), in no order; cooling the free pairs released since, oldest
	// first, from cooling[head].
	rested  []int
	cooling []released
	head    int
	inUse   int
	closed  bool
	now     func() time.Time
}

// released is a pair in its cooldown.
type released struct {
	port int
	at   time.Time
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
	p := &PortPool{bind: bindIP, min: min, max: max, now: time.Now}
	p.rested = make([]int, 0, p.Size())
	for port := min; port+1 <= max; port += 2 {
		p.rested = append(p.rested, port)
	}
	return p, nil
}

// Size returns the number of pairs in the range.
func (p *PortPool) Size() int { return (p.max - p.min + 1) / 2 }

// InUse returns the number of pairs currently allocated.
func (p *PortPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse
}

// Allocate binds a free pair: a rested one picked at random, else the one
// released longest ago. It returns ErrPortsExhausted when no pair of the
// range could be bound.
func (p *PortPool) Allocate() (*PortPair, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("allocate rtp port: %w", ErrClosed)
	}
	now := p.now()
	for p.head < len(p.cooling) && now.Sub(p.cooling[p.head].at) >= PortCooldown {
		p.rested = append(p.rested, p.cooling[p.head].port)
		p.head++
	}
	// Pairs that another program holds are set aside for this allocation
	// and put back after it.
	var taken []int
	var takenCooling []released
	defer func() {
		p.rested = append(p.rested, taken...)
		if len(takenCooling) > 0 {
			q := make([]released, 0, len(takenCooling)+len(p.cooling)-p.head)
			p.cooling, p.head = append(append(q, takenCooling...), p.cooling[p.head:]...), 0
		}
		p.compact()
	}()
	for len(p.rested) > 0 {
		i := rand.IntN(len(p.rested))
		port := p.rested[i]
		p.rested[i] = p.rested[len(p.rested)-1]
		p.rested = p.rested[:len(p.rested)-1]
		if pp := p.bindPair(port); pp != nil {
			return pp, nil
		}
		taken = append(taken, port)
	}
	for p.head < len(p.cooling) {
		r := p.cooling[p.head]
		p.head++
		if pp := p.bindPair(r.port); pp != nil {
			return pp, nil
		}
		takenCooling = append(takenCooling, r)
	}
	return nil, fmt.Errorf("allocate rtp port in %d-%d (%d in use): %w", p.min, p.max, p.inUse, ErrPortsExhausted)
}

// compact drops the consumed front of the cooling queue once it is half
// of it, so the queue's array stays within twice the pairs it holds.
func (p *PortPool) compact() {
	if p.head > 0 && p.head >= len(p.cooling)/2 {
		n := copy(p.cooling, p.cooling[p.head:])
		p.cooling = p.cooling[:n]
		p.head = 0
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
	p.inUse++
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
		pp.pool.inUse--
		pp.pool.cooling = append(pp.pool.cooling, released{pp.port, pp.pool.now()})
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
