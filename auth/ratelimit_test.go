package auth

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type step struct {
	at     time.Duration // offset from t0
	wantOK bool
	retry  time.Duration
}

func TestLimiterSequences(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		qps, qpm int
		steps    []step
	}{
		{"qps 2: third in the same second denied, Retry-After 1", 2, 0, []step{
			{0, true, 0}, {10 * ms, true, 0}, {20 * ms, false, time.Second},
			{499 * ms, false, time.Second}, {500 * ms, true, 0}, {510 * ms, false, time.Second},
			{1000 * ms, true, 0},
		}},
		{"qps 1 sustained", 1, 0, []step{
			{0, true, 0}, {999 * ms, false, time.Second}, {1000 * ms, true, 0}, {2000 * ms, true, 0}, {2001 * ms, false, time.Second},
		}},
		{"qpm 3: burst of 3 then wait 20s per request", 0, 3, []step{
			{0, true, 0}, {1 * ms, true, 0}, {2 * ms, true, 0},
			{3 * ms, false, 20 * time.Second}, // 20s - 3ms rounds up to 20s
			{19 * time.Second, false, time.Second},
			{20 * time.Second, true, 0},
			{20*time.Second + ms, false, 20 * time.Second},
		}},
		{"qps and qpm: the minute limit wins after the burst", 5, 6, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0},
			{0, false, time.Second}, // qps exhausted (qpm still has 1)
			{time.Second, true, 0},  // 6th of the minute
			{2 * time.Second, false, 8 * time.Second},
			{10 * time.Second, true, 0},
		}},
		{"denied requests consume nothing", 1, 0, []step{
			{0, true, 0}, {100 * ms, false, time.Second}, {200 * ms, false, time.Second},
			{300 * ms, false, time.Second}, {1000 * ms, true, 0},
		}},
		{"unlimited", 0, 0, []step{{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimiter()
			for i, s := range tt.steps {
				ok, retry := l.Allow("key1", tt.qps, tt.qpm, t0.Add(s.at))
				require.Equal(t, s.wantOK, ok, "step %d at %v", i, s.at)
				require.Equal(t, s.retry, retry, "step %d at %v", i, s.at)
			}
		})
	}
}

func TestLimiterRetryAfterWholeSeconds(t *testing.T) {
	l := NewLimiter()
	for i := range 7 {
		ok, _ := l.Allow("k", 7, 0, t0)
		require.True(t, ok, "request %d", i)
	}
	for _, off := range []time.Duration{0, time.Millisecond, 100 * time.Millisecond, 142 * time.Millisecond} {
		ok, retry := l.Allow("k", 7, 0, t0.Add(off))
		require.False(t, ok)
		require.Equal(t, time.Second, retry, "retry after %v is rounded up to 1s", off)
		require.Zero(t, retry%time.Second)
	}
}

func TestLimiterKeysAreIndependent(t *testing.T) {
	l := NewLimiter()
	ok, _ := l.Allow("a", 1, 0, t0)
	require.True(t, ok)
	ok, _ = l.Allow("a", 1, 0, t0)
	require.False(t, ok)
	ok, _ = l.Allow("b", 1, 0, t0)
	require.True(t, ok, "key b has its own bucket")
}

func TestLimiterLimitChange(t *testing.T) {
	l := NewLimiter()
	for range 10 {
		ok, _ := l.Allow("k", 10, 0, t0)
		require.True(t, ok)
	}
	// Lowered to 2 qps: the debt of the burst is honoured, not forgotten.
	ok, retry := l.Allow("k", 2, 0, t0)
	require.False(t, ok)
	require.Equal(t, time.Second, retry)
	ok, _ = l.Allow("k", 2, 0, t0.Add(time.Second))
	require.True(t, ok)
}

func TestLimiterEviction(t *testing.T) {
	l := NewLimiter(WithSweepInterval(10 * time.Second))
	for i := range 100 {
		ok, _ := l.Allow(fmt.Sprintf("k%d", i), 1, 60, t0)
		require.True(t, ok)
	}
	require.Equal(t, 100, l.Len())

	// Unlimited requests never create state.
	ok, _ := l.Allow("free", 0, 0, t0)
	require.True(t, ok)
	require.Equal(t, 100, l.Len())

	// Before the sweep interval nothing is dropped.
	ok, _ = l.Allow("busy", 1, 2, t0.Add(5*time.Second))
	require.True(t, ok)
	require.Equal(t, 101, l.Len())

	// At t0+10s the first 100 keys have full buckets again (qpm 60 refills
	// one request in 1s); "busy" still owes its qpm=2 bucket.
	ok, _ = l.Allow("busy", 1, 2, t0.Add(10*time.Second))
	require.True(t, ok)
	require.Equal(t, 1, l.Len())

	// "busy" is still limited: its state survived the sweep.
	ok, retry := l.Allow("busy", 1, 2, t0.Add(11*time.Second))
	require.False(t, ok)
	require.Equal(t, 24*time.Second, retry) // two requests at 30s spacing: TAT t0+65s, next t0+95s, minus the 60s window

	// Once idle for longer than its window, it goes too.
	ok, _ = l.Allow("other", 1, 0, t0.Add(2*time.Minute))
	require.True(t, ok)
	require.Equal(t, 1, l.Len())

	l.Forget("other")
	require.Zero(t, l.Len())
}

func TestLimiterEvictionIsLossless(t *testing.T) {
	// Evicting an idle key must not change any later decision: compare a
	// limiter that sweeps constantly with one that never does.
	sweeping := NewLimiter(WithSweepInterval(time.Nanosecond))
	keeping := NewLimiter(WithSweepInterval(time.Hour))
	now := t0
	for i := range 2000 {
		now = now.Add(time.Duration(i%7) * 37 * time.Millisecond)
		key := fmt.Sprintf("k%d", i%5)
		ok1, r1 := sweeping.Allow(key, 3, 20, now)
		ok2, r2 := keeping.Allow(key, 3, 20, now)
		require.Equal(t, ok2, ok1, "request %d", i)
		require.Equal(t, r2, r1, "request %d", i)
	}
}

func TestLimiterClockBackwards(t *testing.T) {
	l := NewLimiter()
	ok, _ := l.Allow("k", 1, 0, t0)
	require.True(t, ok)
	ok, retry := l.Allow("k", 1, 0, t0.Add(-time.Hour))
	require.False(t, ok, "an earlier clock does not refill the bucket")
	require.Equal(t, time.Hour+time.Second, retry)
}

func TestLimiterConcurrent(t *testing.T) {
	l := NewLimiter()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if ok, _ := l.Allow("shared", 50, 0, t0); ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(50), allowed.Load(), "exactly the burst passes at one instant")
}

func BenchmarkLimiterAllow(b *testing.B) {
	l := NewLimiter()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	now := t0
	i := 0
	for b.Loop() {
		now = now.Add(time.Microsecond)
		l.Allow(keys[i%len(keys)], 100, 6000, now)
		i++
	}
}

func BenchmarkLimiterAllowParallel(b *testing.B) {
	l := NewLimiter()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(fmt.Sprint(i%64), 100, 6000, time.Now())
			i++
		}
	})
}
