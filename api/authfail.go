package api

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Defaults of the failed-authentication throttle.
const (
	// DefaultAuthFailLimit is how many requests with a key that does not
	// authenticate one source address may make within
	// DefaultAuthFailWindow: ten a second costs nothing, thousands would.
	DefaultAuthFailLimit = 100
	// DefaultAuthFailWindow is the window, and the block time past it.
	DefaultAuthFailWindow = 10 * time.Second
	// authFailSources bounds the table; past it, it starts over.
	authFailSources = 100000
)

// authFailures throttles sources that keep failing authentication: a flood
// of made-up keys cannot be rate-limited per key (there is none), and each
// costs a store read. Requests without any key cost no read and are not
// counted. Past limit failures within window, the source's
// requests are refused 429 before any key is looked up, until the window
// ends.
type authFailures struct {
	limit  int
	window time.Duration

	mu sync.Mutex
	m  map[netip.Addr]*failWindow
}

type failWindow struct {
	start time.Time
	n     int
}

// blocked reports whether src is throttled at now, and for how long.
func (f *authFailures) blocked(src netip.Addr, now time.Time) (time.Duration, bool) {
	if f.limit <= 0 || !src.IsValid() {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.m[src]
	if w == nil || w.n < f.limit {
		return 0, false
	}
	left := w.start.Add(f.window).Sub(now)
	if left <= 0 {
		delete(f.m, src)
		return 0, false
	}
	return left, true
}

// fail counts a failed authentication of src at now.
func (f *authFailures) fail(src netip.Addr, now time.Time) {
	if f.limit <= 0 || !src.IsValid() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil || len(f.m) >= authFailSources {
		f.m = make(map[netip.Addr]*failWindow)
	}
	w := f.m[src]
	if w == nil || now.Sub(w.start) >= f.window {
		w = &failWindow{start: now}
		f.m[src] = w
	}
	w.n++
}

// sourceOf is the request's peer address.
func sourceOf(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
