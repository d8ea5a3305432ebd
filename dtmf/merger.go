package dtmf

import (
	"time"
)

// MergerOptions configures a Merger. The zero value is usable.
type MergerOptions struct {
	// Window is how far apart in time the same key, reported by two
	// different sources, is still taken for one press. Default 250 ms:
	// larger than the jitter-buffer delay between an RTP event and its
	// tone, smaller than the shortest press-plus-pause of a human (about
	// 80 ms tone + 80 ms pause is the fastest dialer; people are slower).
	Window time.Duration
}

// DefaultMergeWindow is the default MergerOptions.Window.
const DefaultMergeWindow = 250 * time.Millisecond

// mergerSize is how many recent presses a Merger remembers.
const mergerSize = 16

type mergerEntry struct {
	at      time.Time // first: 32 bytes an entry, not 40
	digit   byte
	src     Source
	matched uint8 // bit per Source already merged into this press
}

// Merger takes key presses from all sources (RFC 4733, SIP INFO, in-band
// tones) and drops the copies, so a key that arrives both as an event and as
// a tone counts once. It is not safe for concurrent use.
//
// Rules:
//   - Presses from the same source are never merged: each source already
//     tells its own presses apart (RFC 4733 by timestamp, the tone detector
//     by the pause between tones, INFO by request), so the same key pressed
//     twice quickly stays two presses.
//   - A press from another source, of the same key, within Window of an
//     accepted press, is a copy of it, and each accepted press absorbs at
//     most one copy per other source. So "5 5" sent both as events and as
//     tones gives event 5, tone 5 (copy of the first), event 5, tone 5 (copy
//     of the second): two presses, in any arrival order.
type Merger struct {
	opts   MergerOptions
	recent [mergerSize]mergerEntry
	pos    int
}

// NewMerger returns a Merger.
func NewMerger(opts MergerOptions) *Merger {
	if opts.Window <= 0 {
		opts.Window = DefaultMergeWindow
	}
	return &Merger{opts: opts}
}

// Add reports whether ev is a new press (true) or a copy of one already
// accepted from another source (false).
func (m *Merger) Add(ev Event) bool {
	best := -1
	var bestGap time.Duration
	bit := uint8(1) << (ev.Source & 7)
	for i := range m.recent {
		e := &m.recent[i]
		if e.digit != ev.Digit || e.src == ev.Source || e.matched&bit != 0 || e.at.IsZero() {
			continue
		}
		gap := ev.At.Sub(e.at)
		if gap < 0 {
			gap = -gap
		}
		if gap > m.opts.Window {
			continue
		}
		if best < 0 || gap < bestGap {
			best, bestGap = i, gap
		}
	}
	if best >= 0 {
		m.recent[best].matched |= bit
		return false
	}
	m.recent[m.pos] = mergerEntry{digit: ev.Digit, src: ev.Source, at: ev.At, matched: bit}
	m.pos = (m.pos + 1) % mergerSize
	return true
}
