package sip

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSourceGuard: a source is blocked at its limit within the window,
// stays blocked for the block time, then starts afresh; failures spread
// over more than a window never block; the table is emptied by prune.
func TestSourceGuard(t *testing.T) {
	now := time.Unix(1000, 0)
	g := newSourceGuard(3, 10*time.Second, time.Minute, func() time.Time { return now })
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")

	require.Equal(t, counted, g.fail(a))
	require.Equal(t, counted, g.fail(a))
	require.False(t, g.blocked(a))
	require.Equal(t, blockedNow, g.fail(a))
	require.True(t, g.blocked(a))
	require.False(t, g.blocked(b), "only the failing source")
	require.Equal(t, alreadyBlocked, g.fail(a))

	now = now.Add(59 * time.Second)
	require.True(t, g.blocked(a))
	now = now.Add(2 * time.Second)
	require.False(t, g.blocked(a), "the block expires")
	require.Equal(t, counted, g.fail(a), "and counting starts afresh")

	for range 5 {
		require.Equal(t, counted, g.fail(b))
		now = now.Add(6 * time.Second) // two per window at most
		if g.fail(b) == blockedNow {
			t.Fatal("failures over more than a window blocked the source")
		}
		now = now.Add(6 * time.Second)
	}
	now = now.Add(time.Hour)
	g.prune()
	require.Zero(t, g.tracked())
}
