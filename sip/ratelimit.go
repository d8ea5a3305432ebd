package sip

import (
	"net/netip"
	"sync"
	"time"
)

// failLimiter counts failed authentications per source address over a
// fixed window; a source that reaches the limit is blocked until its
// window ends, so scanners cannot brute-force a password.
type failLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	sources map[netip.Addr]*failWindow
}

type failWindow struct {
	start time.Time
	count int
}

func newFailLimiter(limit int, window time.Duration, now func() time.Time) *failLimiter {
	return &failLimiter{limit: limit, window: window, now: now, sources: map[netip.Addr]*failWindow{}}
}

// blocked reports whether src has used up its failures in this window.
func (l *failLimiter) blocked(src netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.sources[src]
	if !ok {
		return false
	}
	if l.now().Sub(w.start) >= l.window {
		delete(l.sources, src)
		return false
	}
	return w.count >= l.limit
}

// fail records one failure and reports whether src is now blocked.
func (l *failLimiter) fail(src netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w, ok := l.sources[src]
	if !ok || now.Sub(w.start) >= l.window {
		if len(l.sources) >= maxTrackedSources {
			l.pruneLocked(now)
		}
		w = &failWindow{start: now}
		l.sources[src] = w
	}
	w.count++
	return w.count >= l.limit
}

func (l *failLimiter) pruneLocked(now time.Time) {
	for k, w := range l.sources {
		if now.Sub(w.start) >= l.window {
			delete(l.sources, k)
		}
	}
}
