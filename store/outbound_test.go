package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var errFull = errors.New("full")

// admitAtMost admits while fewer than max slots are held, moving the
// arrival time one second on.
func admitAtMost(max int) OutboundAdmit {
	return func(tat time.Time, active int) (time.Time, error) {
		if active >= max {
			return time.Time{}, errFull
		}
		return tat.Add(time.Second), nil
	}
}

func TestOutboundSlots(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	out := s.Outbound()
	base := time.Unix(1_700_000_000, 0).UTC()
	var tats []time.Time
	admit := func(tat time.Time, active int) (time.Time, error) {
		tats = append(tats, tat)
		return admitAtMost(2)(tat, active)
	}
	require.NoError(t, out.Reserve(ctx, &OutboundSlot{ID: "s1", TeamID: "t", NodeID: "a", StartTime: base}, admit))
	require.NoError(t, out.Reserve(ctx, &OutboundSlot{ID: "s2", TeamID: "t", NodeID: "b", StartTime: base}, admit))
	require.ErrorIs(t, out.Reserve(ctx, &OutboundSlot{ID: "s3", TeamID: "t", NodeID: "a", StartTime: base}, admit), errFull)
	require.True(t, tats[0].IsZero(), "a new team has no rate state")
	require.Equal(t, time.Time{}.Add(2*time.Second), tats[2], "each admission stored its arrival time; the refusal none")
	require.NoError(t, out.Reserve(ctx, &OutboundSlot{ID: "o1", TeamID: "other", NodeID: "a", StartTime: base}, admit),
		"another team has its own slots")

	require.NoError(t, out.Release(ctx, "s1"))
	require.NoError(t, out.Release(ctx, "s1"), "a second release does nothing")
	require.NoError(t, out.Reserve(ctx, &OutboundSlot{ID: "s3", TeamID: "t", NodeID: "a", StartTime: base}, admit))

	// Node b is found lost: its slot stops counting.
	require.NoError(t, s.Nodes().Put(ctx, &Node{ID: "b", ClusterAddr: "x", State: NodeActive, StartTime: base, Heartbeat: base}))
	require.ErrorIs(t, out.Reserve(ctx, &OutboundSlot{ID: "s4", TeamID: "t", NodeID: "a", StartTime: base}, admit), errFull)
	ok, err := s.Nodes().ClaimLost(ctx, "b", base.Add(time.Second))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, out.Reserve(ctx, &OutboundSlot{ID: "s4", TeamID: "t", NodeID: "a", StartTime: base}, admit))

	n, err := out.ReleaseNode(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 3, n, "s3, s4 and the other team's o1")
}

// TestOutboundSlotsConcurrent: reservations from many goroutines on
// connections of their own (as nodes would) never hold more slots than
// admit allows.
func TestOutboundSlotsConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := opener(t, dir)
	var stores []*DB
	for range 3 {
		s, err := open()
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
	)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[i%len(stores)]
			err := s.Outbound().Reserve(ctx, &OutboundSlot{ID: fmt.Sprint("s", i), TeamID: "t", NodeID: "n", StartTime: time.Now()}, admitAtMost(5))
			if err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
				return
			}
			require.ErrorIs(t, err, errFull)
		}()
	}
	wg.Wait()
	require.Equal(t, 5, admitted)
}
