package auth

import (
	"sync"
	"time"
)

// DefaultSweepInterval is how often, in injected time, a [Limiter] drops
// idle keys when no [WithSweepInterval] option is given.
const DefaultSweepInterval = time.Minute

// Limiter enforces per-key request rates (qps and qpm) with GCRA, the
// generic cell rate algorithm: an exact token bucket of capacity equal to the
// limit that refills continuously, stored as one "theoretical arrival time"
// per window. A key may burst up to its limit and then proceeds at the
// sustained rate.
//
// Memory is bounded by the keys active within the last minute: a key whose
// arrival times are all in the past has full buckets, so forgetting it loses
// nothing, and the periodic sweep does exactly that. A Limiter is safe for
// concurrent use; time is passed in, so it has no goroutines and no clock.
type Limiter struct {
	mu         sync.Mutex
	keys       map[string]*limiterEntry
	sweepEvery time.Duration
	lastSweep  time.Time
}

type limiterEntry struct {
	secTAT, minTAT time.Time // theoretical arrival times
}

// LimiterOption configures a [Limiter].
type LimiterOption func(*Limiter)

// WithSweepInterval sets how often idle keys are dropped (default
// [DefaultSweepInterval]).
func WithSweepInterval(d time.Duration) LimiterOption {
	return func(l *Limiter) {
		if d > 0 {
			l.sweepEvery = d
		}
	}
}

// NewLimiter returns an empty Limiter.
func NewLimiter(opts ...LimiterOption) *Limiter {
	l := &Limiter{keys: make(map[string]*limiterEntry), sweepEvery: DefaultSweepInterval}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Allow reports whether a request by keyID at now is within the key's
// limits of qps requests per second and qpm per minute (0 means unlimited).
// A denied request consumes nothing; retryAfter is then the wait until the
// request would pass, rounded up to whole seconds and at least 1, ready for
// a Retry-After header. When allowed, retryAfter is 0.
func (l *Limiter) Allow(keyID string, qps, qpm int, now time.Time) (ok bool, retryAfter time.Duration) {
	if qps <= 0 && qpm <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maybeSweep(now)

	e := l.keys[keyID]
	if e == nil {
		e = &limiterEntry{}
		l.keys[keyID] = e
	}
	secTAT, secWait := GCRA(e.secTAT, qps, time.Second, now)
	minTAT, minWait := GCRA(e.minTAT, qpm, time.Minute, now)
	wait := max(secWait, minWait)
	if wait > 0 {
		return false, roundUpSeconds(wait)
	}
	e.secTAT, e.minTAT = secTAT, minTAT
	return true, 0
}

// GCRA is one step of the generic cell rate algorithm for limit requests
// per period: given the theoretical arrival time tat (zero for a fresh
// key), it returns the new one if a request at now is admitted, or the
// positive wait before it could be (tat unchanged). A limit ≤ 0 is
// unlimited. The Limiter keeps tat in memory; the outbound limits keep it
// in the store, shared by a fleet.
func GCRA(tat time.Time, limit int, period time.Duration, now time.Time) (time.Time, time.Duration) {
	if limit <= 0 {
		return tat, 0
	}
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(period / time.Duration(limit))
	// Admit while the bucket holds at most `limit` requests' worth of
	// debt, i.e. next - now <= period.
	if wait := next.Sub(now) - period; wait > 0 {
		return tat, wait
	}
	return next, 0
}

func roundUpSeconds(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	return max(s, 1) * time.Second
}

// maybeSweep drops every key whose buckets are full again. Callers hold mu.
func (l *Limiter) maybeSweep(now time.Time) {
	d := now.Sub(l.lastSweep)
	if d < 0 && -d > l.sweepEvery {
		l.lastSweep = now // the injected clock jumped back: re-anchor
	}
	if d < l.sweepEvery {
		return
	}
	l.lastSweep = now
	for id, e := range l.keys {
		if !e.secTAT.After(now) && !e.minTAT.After(now) {
			delete(l.keys, id)
		}
	}
}

// Forget drops a key's state, for example when the key is deleted or its
// limits are changed.
func (l *Limiter) Forget(keyID string) {
	l.mu.Lock()
	delete(l.keys, keyID)
	l.mu.Unlock()
}

// Len returns the number of keys currently tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
