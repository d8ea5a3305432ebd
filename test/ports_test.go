package test

import (
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The loopback ports the end-to-end tests hand to daemons and peers as
// RTP (and WebRTC) ranges. Every test takes its own ranges here, so that
// tests run side by side never share a port, and a test that proves its
// ports were returned (requirePortsFree) or that blasts a whole range
// (the stranger) touches only its own.
//
// The region lies above the random picks of freeSIPPort and
// freeBaresipPort (15000-29999) and the RTP ports of `switchboard dial`
// (30000-30999 unless told), and below the kernel's ephemeral range
// (32768 and up), so that no outgoing connection and no other helper takes
// a port of it.
const (
	portsFirst = 31000
	portsLast  = 32767
)

// portRange is an inclusive range of loopback UDP ports; lo is even (RTP
// takes even ports, RTCP the odd one above).
type portRange struct{ lo, hi int }

// String is the range as the daemon's flags and baresip's rtp_ports
// take it: "30100-30119".
func (r portRange) String() string { return fmt.Sprintf("%d-%d", r.lo, r.hi) }

// contains says whether port is in the range.
func (r portRange) contains(port int) bool { return port >= r.lo && port <= r.hi }

// portsHeld are the ranges tests hold now; next is where the search for
// the next range starts.
var portsHeld struct {
	mu     sync.Mutex
	ranges []portRange
	next   int
}

// takePorts reserves n ports (rounded up to even) for t until t and its
// subtests end. It takes the first free range after the last one taken,
// wrapping around the region: a range is used again as late as possible,
// so that a daemon a failed test could not stop holds no port of the
// next test's range. It fails t when the region has no room left: the
// tests running at once hold more than it has.
func takePorts(t testing.TB, n int) portRange {
	t.Helper()
	n += n % 2
	portsHeld.mu.Lock()
	defer portsHeld.mu.Unlock()
	lo, wrapped := max(portsHeld.next, portsFirst), false
	for {
		r := portRange{lo, lo + n - 1}
		if r.hi > portsLast {
			require.False(t, wrapped, "no room for %d ports in %d-%d: held %v", n, portsFirst, portsLast, portsHeld.ranges)
			lo, wrapped = portsFirst, true
			continue
		}
		clash := false
		for _, h := range portsHeld.ranges {
			if r.lo <= h.hi && h.lo <= r.hi {
				lo, clash = h.hi+1+(h.hi+1)%2, true
				break
			}
		}
		if clash {
			continue
		}
		portsHeld.ranges = append(portsHeld.ranges, r)
		portsHeld.next = r.hi + 1
		t.Cleanup(func() { releasePorts(r) })
		return r
	}
}

// releasePorts gives r back.
func releasePorts(r portRange) {
	portsHeld.mu.Lock()
	defer portsHeld.mu.Unlock()
	for i, h := range portsHeld.ranges {
		if h == r {
			portsHeld.ranges = append(portsHeld.ranges[:i], portsHeld.ranges[i+1:]...)
			return
		}
	}
}

// withOwnRTP is env (copied) with an RTP range of t's own, unless env
// names one already.
func withOwnRTP(t testing.TB, env map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	if _, ok := out["SWITCHBOARD_RTP_PORTS"]; !ok {
		out["SWITCHBOARD_RTP_PORTS"] = takePorts(t, 20).String()
	}
	return out
}

// requireRangeFree binds every port of r, proving whoever had them
// (a daemon's calls) released them.
func requireRangeFree(t *testing.T, r portRange) {
	t.Helper()
	for p := r.lo; p <= r.hi; p++ {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		require.NoError(t, err, "rtp port %d still bound after the calls", p)
		c.Close()
	}
}

// TestTakePorts: ranges are even-aligned, inside the region, disjoint
// from every range held, and a range given back is not handed out again
// before the rest of the region was.
func TestTakePorts(t *testing.T) {
	var first portRange
	t.Run("held", func(t *testing.T) {
		var got []portRange
		for _, n := range []int{20, 3, 40, 2} {
			r := takePorts(t, n)
			require.Zero(t, r.lo%2, "%v", r)
			require.Equal(t, n+n%2, r.hi-r.lo+1, "%v", r)
			require.True(t, r.lo >= portsFirst && r.hi <= portsLast, "%v", r)
			for _, o := range got {
				require.False(t, r.lo <= o.hi && o.lo <= r.hi, "%v overlaps %v", r, o)
			}
			got = append(got, r)
		}
		first = got[0]
	})
	next := takePorts(t, 20)
	require.NotEqual(t, first, next, "a range given back was handed out again at once")
}
