package media

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRxStatsLossAndWrap(t *testing.T) {
	var rx rxStats
	now := time.Unix(0, 0)
	// 65530..65535, 0..9 with 3 and 65533 missing, one duplicate and one reordered.
	seqs := []uint16{65530, 65531, 65532, 65534, 65535, 0, 1, 2, 2, 5, 4, 6, 7, 8, 9}
	for i, s := range seqs {
		rx.update(7, s, uint32(i)*160, now.Add(time.Duration(i)*20*time.Millisecond))
	}
	require.Equal(t, uint64(16), rx.expected())
	require.Equal(t, int64(16-15), rx.lost()) // 2 lost, 1 duplicate
	require.Equal(t, uint32(1<<16+9), rx.extendedMax())
	require.Equal(t, uint8(256/16), rx.fractionLost())
	require.Equal(t, uint8(0), rx.fractionLost()) // nothing new since

	var s Stats
	rx.publish(&s)
	snap := s.Snapshot()
	require.Equal(t, int64(1), snap.Lost)
	require.Equal(t, uint64(16), snap.Expected)
}

func TestRxStatsJitter(t *testing.T) {
	tests := []struct {
		name  string
		skew  func(i int) time.Duration
		check func(t *testing.T, j time.Duration)
	}{
		{"perfect pacing has no jitter", func(int) time.Duration { return 0 }, func(t *testing.T, j time.Duration) { require.Zero(t, j) }},
		{"alternating 10 ms skew", func(i int) time.Duration { return time.Duration(i%2) * 10 * time.Millisecond },
			// RFC 3550 A.8 converges to the mean |D| = 10 ms.
			func(t *testing.T, j time.Duration) { require.InDelta(t, 10, j.Seconds()*1000, 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rx rxStats
			for i := range 500 {
				at := time.Unix(0, 0).Add(time.Duration(i)*20*time.Millisecond + tt.skew(i))
				rx.update(1, uint16(i), uint32(i*160), at)
			}
			var s Stats
			rx.publish(&s)
			tt.check(t, s.Snapshot().Jitter)
		})
	}
}

func TestRxStatsSSRCChangeKeepsTotals(t *testing.T) {
	var rx rxStats
	now := time.Unix(0, 0)
	rx.update(1, 10, 0, now)
	rx.update(1, 12, 320, now) // one lost
	require.True(t, rx.update(2, 500, 0, now))
	rx.update(2, 501, 160, now)
	var s Stats
	rx.publish(&s)
	require.Equal(t, int64(1), s.Snapshot().Lost)
	require.Equal(t, uint64(5), s.Snapshot().Expected)
}

func TestStatsCounters(t *testing.T) {
	var s Stats
	for _, r := range []PushResult{PushAccepted, PushDuplicate, PushLate, PushLate, PushSSRCChange, PushResync, PushUnsupported} {
		s.CountPush(r)
	}
	for _, f := range []FrameStatus{FrameIdle, FramePlayed, FrameConcealed, FrameSilence} {
		s.CountFrame(f)
	}
	s.CountOut(160)
	snap := s.Snapshot()
	require.Equal(t, StatsSnapshot{Duplicates: 1, Late: 2, SSRCChanges: 1, Resyncs: 1, Ignored: 1,
		Played: 1, Concealed: 1, Silenced: 1, PacketsOut: 1, BytesOut: 160}, snap)
	require.Equal(t, "late", PushLate.String())
	require.Equal(t, "concealed", FrameConcealed.String())
}
