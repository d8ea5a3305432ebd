package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNodesRegisterBeatAndClaimLost(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	base := time.Unix(1_700_000_000, 0).UTC()
	for _, id := range []string{"b", "a"} {
		require.NoError(t, s.Nodes().Put(ctx, &Node{ID: id, ClusterAddr: "127.0.0.1:80" + id, SIPAddr: "127.0.0.1:5060",
			State: NodeActive, StartTime: base, Heartbeat: base}))
	}
	ns, err := s.Nodes().List(ctx)
	require.NoError(t, err)
	require.Len(t, ns, 2)
	require.Equal(t, "a", ns[0].ID)
	require.Equal(t, "127.0.0.1:80a", ns[0].ClusterAddr)

	require.NoError(t, s.Nodes().Beat(ctx, "a", NodeDraining, base.Add(5*time.Second)))
	require.ErrorIs(t, s.Nodes().Beat(ctx, "nope", NodeActive, base), ErrNotFound)
	a, err := s.Nodes().Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, NodeDraining, a.State)
	require.Equal(t, base.Add(5*time.Second), a.Heartbeat)

	// b stopped beating at base: a cutoff before that claims nothing.
	ok, err := s.Nodes().ClaimLost(ctx, "b", base)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = s.Nodes().ClaimLost(ctx, "b", base.Add(time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.Nodes().ClaimLost(ctx, "b", base.Add(time.Second))
	require.NoError(t, err)
	require.False(t, ok, "a lost node is claimed once")
	require.ErrorIs(t, s.Nodes().Beat(ctx, "b", NodeActive, base.Add(2*time.Second)), ErrNotFound,
		"a node declared lost must register again")

	// Registering again revives it.
	require.NoError(t, s.Nodes().Put(ctx, &Node{ID: "b", ClusterAddr: "127.0.0.1:9000", State: NodeActive,
		StartTime: base.Add(time.Minute), Heartbeat: base.Add(time.Minute)}))
	b, err := s.Nodes().Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, NodeActive, b.State)
	require.Equal(t, "127.0.0.1:9000", b.ClusterAddr)
}

func TestCloseOpenOfOneNode(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	base := time.Unix(1_700_000_000, 0).UTC()
	for _, c := range []struct{ id, node string }{{"x1", "x"}, {"x2", "x"}, {"y1", "y"}, {"old", ""}} {
		require.NoError(t, s.Calls().Put(ctx, &Call{ID: c.id, TeamID: "default", State: "active", NodeID: c.node,
			InviteTime: base, AliveTime: base.Add(time.Second)}))
	}
	n, err := s.Calls().CloseOpen(ctx, CloseOpen{Nodes: []string{"x"}, State: "ended", EndedBy: "node_lost"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	y, err := s.Calls().Get(ctx, "y1")
	require.NoError(t, err)
	require.True(t, y.EndTime.IsZero(), "another node's call stays open")
	require.Equal(t, "y", y.NodeID)
	x, err := s.Calls().Get(ctx, "x1")
	require.NoError(t, err)
	require.Equal(t, "node_lost", x.EndedBy)
	require.Equal(t, base.Add(time.Second), x.EndTime)
	n, err = s.Calls().CloseOpen(ctx, CloseOpen{Nodes: []string{"y", ""}, State: "ended", EndedBy: "crash"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
}
