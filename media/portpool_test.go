package media

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// freeRange finds a run of free ports on loopback for the pool tests,
// above the fixed ranges the end-to-end tests give their daemons (20000
// to 33199, and 42000 to 42999, in package test): make test runs this
// package beside them, and a session of these tests on an end-to-end
// daemon's RTP port failed that test's check that its ports were freed.
func freeRange(t testing.TB, n int) int {
	t.Helper()
	for base := 44000; base < 60000; base += 2 * n {
		ok := true
		for port := base; port < base+n; port++ {
			c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
			if err != nil {
				ok = false
				break
			}
			_ = c.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range on loopback")
	return 0
}

func TestPortPool(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	base := freeRange(t, 8)
	pool, err := NewPortPool(lo, base+1, base+7) // odd min rounds up: pairs base+2, +4, +6
	require.NoError(t, err)
	require.Equal(t, 3, pool.Size())

	// Someone else holds base+4: it is skipped.
	squatter, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: base + 5})
	require.NoError(t, err)

	a, err := pool.Allocate()
	require.NoError(t, err)
	b, err := pool.Allocate()
	require.NoError(t, err)
	for _, pp := range []*PortPair{a, b} {
		require.Zero(t, pp.Port()%2, "rtp port even")
		require.Equal(t, pp.Port(), pp.RTP.LocalAddr().(*net.UDPAddr).Port)
		require.Equal(t, pp.Port()+1, pp.RTCP.LocalAddr().(*net.UDPAddr).Port)
	}
	require.ElementsMatch(t, []int{base + 2, base + 6}, []int{a.Port(), b.Port()})
	_, err = pool.Allocate()
	require.ErrorIs(t, err, ErrPortsExhausted)
	require.Equal(t, 2, pool.InUse())

	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "idempotent")
	require.Equal(t, 1, pool.InUse())
	c, err := pool.Allocate()
	require.NoError(t, err)
	require.Equal(t, a.Port(), c.Port(), "a pair released lately is reused when no other is free")
	require.NoError(t, squatter.Close())
	require.NoError(t, c.Close())
	require.NoError(t, b.Close())

	require.NoError(t, pool.Close())
	_, err = pool.Allocate()
	require.ErrorIs(t, err, ErrClosed)
}

func TestPortPoolBadRange(t *testing.T) {
	for _, r := range [][2]int{{0, 10}, {20000, 20000}, {20001, 20001}, {65534, 65536}} {
		_, err := NewPortPool(netip.Addr{}, r[0], r[1])
		require.ErrorIs(t, err, errBadPortRange, "%v", r)
	}
}

// TestPortPoolRandom: ports are not handed out in order, a released pair
// rests while others are free, and every pair of the range is reachable.
func TestPortPoolRandom(t *testing.T) {
	base := freeRange(t, 100)
	pool, err := NewPortPool(netip.MustParseAddr("127.0.0.1"), base, base+99)
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	pool.now = func() time.Time { return now }
	var seq []int
	seen := map[int]bool{}
	for range 30 {
		pp, err := pool.Allocate()
		require.NoError(t, err)
		require.False(t, seen[pp.Port()], "port %d reused within the cooldown while others were free", pp.Port())
		seen[pp.Port()] = true
		seq = append(seq, pp.Port())
		require.NoError(t, pp.Close())
	}
	steps := map[int]bool{}
	for i := 1; i < len(seq); i++ {
		steps[seq[i]-seq[i-1]] = true
	}
	require.Greater(t, len(steps), 5, "allocation order is guessable: %v", seq)

	// Cooldown over: all 50 pairs can be held at once.
	now = now.Add(PortCooldown)
	var held []*PortPair
	for range pool.Size() {
		pp, err := pool.Allocate()
		require.NoError(t, err)
		held = append(held, pp)
	}
	_, err = pool.Allocate()
	require.ErrorIs(t, err, ErrPortsExhausted)
	for _, pp := range held {
		require.NoError(t, pp.Close())
	}
}

// TestPortPoolCoolingOldestFirst: when every free pair is in its cooldown
// the one released longest ago is taken, and a pair another program holds
// is skipped without losing its place.
func TestPortPoolCoolingOldestFirst(t *testing.T) {
	base := freeRange(t, 8)
	pool, err := NewPortPool(netip.MustParseAddr("127.0.0.1"), base, base+7)
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	pool.now = func() time.Time { return now }
	var held []*PortPair
	for range 4 {
		pp, err := pool.Allocate()
		require.NoError(t, err)
		held = append(held, pp)
	}
	order := []int{held[2].Port(), held[0].Port(), held[3].Port(), held[1].Port()}
	for _, i := range []int{2, 0, 3, 1} {
		now = now.Add(time.Second)
		require.NoError(t, held[i].Close())
	}
	squatter, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: order[0]})
	require.NoError(t, err)
	a, err := pool.Allocate()
	require.NoError(t, err)
	require.Equal(t, order[1], a.Port(), "the oldest free pair, past the one held by another program")
	require.NoError(t, squatter.Close())
	b, err := pool.Allocate()
	require.NoError(t, err)
	require.Equal(t, order[0], b.Port(), "the skipped pair kept its place")
	c, err := pool.Allocate()
	require.NoError(t, err)
	require.Equal(t, order[2], c.Port())
	for _, pp := range []*PortPair{a, b, c} {
		require.NoError(t, pp.Close())
	}
	require.Equal(t, 0, pool.InUse())
}

// BenchmarkPortPoolAllocate is a call setup's pair at a high call rate:
// every free pair of the 1,000-pair range in its cooldown.
func BenchmarkPortPoolAllocate(b *testing.B) {
	base := freeRange(b, 2000)
	pool, err := NewPortPool(netip.MustParseAddr("127.0.0.1"), base, base+1999)
	if err != nil {
		b.Fatal(err)
	}
	held := make([]*PortPair, 0, 100)
	for b.Loop() {
		pp, err := pool.Allocate()
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, pp)
		if len(held) == cap(held) {
			for _, pp := range held {
				pp.Close()
			}
			held = held[:0]
		}
	}
	for _, pp := range held {
		pp.Close()
	}
}
