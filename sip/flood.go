package sip

import (
	"net/netip"
	"sync"
	"time"
)

// sourceGuard counts the failing requests of each source address (bad
// messages, unknown numbers, refused INVITEs, requests outside any dialog)
// over a fixed window. A source that reaches the limit is put on a block
// list until its block time is over; while blocked, everything it sends is
// dropped before it is parsed, so a flood costs a map lookup per datagram
// and gets no answer to amplify.
type sourceGuard struct {
	limit  int
	window time.Duration
	block  time.Duration
	now    func() time.Time

	mu      sync.Mutex
	sources map[netip.Addr]*sourceState
	// blocks counts the sources blocked since start (for the metric and
	// tests).
	blocks uint64
}

type sourceState struct {
	start        time.Time
	count        int
	blockedUntil time.Time
}

// maxTrackedSources bounds the memory of a limiter under a flood from
// spoofed source addresses: when the table is full and nothing in it has
// expired, new sources are not tracked (they are still answered, each
// answer no bigger than its request).
const maxTrackedSources = 100_000

func newSourceGuard(limit int, window, block time.Duration, now func() time.Time) *sourceGuard {
	return &sourceGuard{limit: limit, window: window, block: block, now: now, sources: map[netip.Addr]*sourceState{}}
}

// blocked reports whether src is on the block list now.
func (g *sourceGuard) blocked(src netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	st, ok := g.sources[src]
	if !ok || st.blockedUntil.IsZero() {
		return false
	}
	if g.now().Before(st.blockedUntil) {
		return true
	}
	delete(g.sources, src)
	return false
}

// verdict is what a failing request did to its source.
type verdict int

const (
	counted        verdict = iota // counted, under the limit
	blockedNow                    // this one reached the limit
	alreadyBlocked                // the source was blocked already (in flight)
)

// fail records one failing request from src.
func (g *sourceGuard) fail(src netip.Addr) verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	st, ok := g.sources[src]
	switch {
	case ok && !st.blockedUntil.IsZero() && now.Before(st.blockedUntil):
		return alreadyBlocked
	case !ok || now.Sub(st.start) >= g.window || !st.blockedUntil.IsZero():
		if !ok && len(g.sources) >= maxTrackedSources {
			g.pruneLocked(now)
			if len(g.sources) >= maxTrackedSources {
				return counted
			}
		}
		st = &sourceState{start: now}
		g.sources[src] = st
	}
	st.count++
	if st.count < g.limit {
		return counted
	}
	st.blockedUntil = now.Add(g.block)
	g.blocks++
	return blockedNow
}

// tracked is the number of sources in the table.
func (g *sourceGuard) tracked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sources)
}

func (g *sourceGuard) pruneLocked(now time.Time) {
	for k, st := range g.sources {
		if st.blockedUntil.IsZero() && now.Sub(st.start) >= g.window || !st.blockedUntil.IsZero() && !now.Before(st.blockedUntil) {
			delete(g.sources, k)
		}
	}
}

// prune drops the expired entries; the server calls it periodically so a
// flood's table is returned once the flood is over.
func (g *sourceGuard) prune() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pruneLocked(g.now())
	if len(g.sources) == 0 {
		// A map keeps its buckets after deletes: start a fresh one.
		g.sources = map[netip.Addr]*sourceState{}
	}
}

// pruneLoop empties the failure tables of what has expired, so that the
// memory a flood took is given back once it is over.
func (s *Server) pruneLoop(stop <-chan struct{}) {
	t := time.NewTicker(min(s.opts.SourceFailWindow, s.opts.SourceBlockTime))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.flood.prune()
		}
	}
}

// FloodStats are the gate's counters.
type FloodStats struct {
	// Dropped counts the datagrams and connections of blocked sources.
	Dropped uint64
	// Malformed counts the messages the parser refused.
	Malformed uint64
	// Blocks counts the times a source was blocked.
	Blocks uint64
	// Tracked is the number of source addresses in the failure table.
	Tracked int
}

// FloodStats returns the gate's counters.
func (s *Server) FloodStats() FloodStats {
	s.flood.mu.Lock()
	blocks := s.flood.blocks
	s.flood.mu.Unlock()
	return FloodStats{Dropped: s.dropped.Load(), Malformed: s.malformed.Load(), Blocks: blocks, Tracked: s.flood.tracked()}
}
