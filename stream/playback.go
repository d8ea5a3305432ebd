package stream

import "time"

// playback mirrors what a stream queued on the caller's playout, counted
// in bytes of the protocol's audio: tail grows with every chunk of the
// bot's audio written to the Speaker, head with every byte that left the
// queue (sent by the pacer, dropped by a flood's Trim, flushed by clear).
// The Speaker's Pending says how much is still queued, so after the
// pacer's tick head = tail - pending: a mark placed at tail is answered
// once head reaches it, that is once the pacer has sent every frame of
// the audio before it. Nothing is guessed from a clock. With keep (the
// "both" track) it also holds the bytes between head and tail, so what
// the pacer sent can go to the bot as the outbound track.
//
// playback is not safe for concurrent use: the Stream's mutex guards it.
type playback struct {
	bps        int64 // bytes per second of the protocol's audio
	head, tail int64
	marks      []mark
	keep       bool
	ring       []byte // bytes [head, tail) when keep: ring[rhead:]
	rhead      int
}

// mark is a mark the bot placed after the audio up to at.
type mark struct {
	name string
	at   int64
}

func newPlayback(bps int, keep bool) *playback {
	return &playback{bps: int64(bps), keep: keep}
}

// bytes converts a duration of audio into bytes, rounding down.
func (p *playback) bytes(d time.Duration) int64 { return int64(d) * p.bps / int64(time.Second) }

// queued records b, the bot's audio just written to the Speaker.
func (p *playback) queued(b []byte) {
	p.tail += int64(len(b))
	if !p.keep {
		return
	}
	if p.rhead > 0 && p.rhead >= len(p.ring)/2 {
		p.ring = p.ring[:copy(p.ring, p.ring[p.rhead:])]
		p.rhead = 0
	}
	p.ring = append(p.ring, b...)
}

// idle reports that nothing of the bot's audio is queued.
func (p *playback) idle() bool { return p.head == p.tail }

// quiet reports that nothing is queued and no mark waits: a tick has
// nothing to do.
func (p *playback) quiet() bool { return p.idle() && len(p.marks) == 0 }

// advance moves head to what the Speaker still has pending: it appends
// the bytes that were played to played (when kept) and the names of the
// marks whose audio has now been played to names.
func (p *playback) advance(pending time.Duration, played []byte, names []string) ([]byte, []string) {
	h := p.tail - p.bytes(pending)
	if h > p.head {
		if p.keep {
			n := int(h - p.head)
			played = append(played, p.ring[p.rhead:p.rhead+n]...)
			p.rhead += n
		}
		p.head = h
	}
	return played, p.passed(names)
}

// passed pops the marks at or before head.
func (p *playback) passed(names []string) []string {
	n := 0
	for n < len(p.marks) && p.marks[n].at <= p.head {
		names = append(names, p.marks[n].name)
		n++
	}
	if n > 0 {
		p.marks = p.marks[:copy(p.marks, p.marks[n:])]
	}
	return names
}

// dropped records that the oldest d of the queue left unplayed (Trim):
// its bytes are not played to anyone, its marks are passed.
func (p *playback) dropped(d time.Duration) {
	n := min(p.bytes(d), p.tail-p.head)
	p.head += n
	if p.keep {
		p.rhead += int(n)
	}
}

// cleared records a flush of the whole queue (clear) and returns every
// mark still waiting: their audio will never play.
func (p *playback) cleared(names []string) []string {
	p.head = p.tail
	p.ring, p.rhead = p.ring[:0], 0
	for _, m := range p.marks {
		names = append(names, m.name)
	}
	p.marks = p.marks[:0]
	return names
}

// mark places a mark after the audio queued so far; ready says it is
// answered at once (nothing is queued). It reports false when max marks
// already wait.
func (p *playback) mark(name string, max int) (ready, ok bool) {
	if p.idle() && len(p.marks) == 0 {
		return true, true
	}
	if len(p.marks) >= max {
		return false, false
	}
	p.marks = append(p.marks, mark{name: name, at: p.tail})
	return false, true
}

// waiting is how much audio stands before the first waiting mark (0:
// none waits).
func (p *playback) waiting() time.Duration {
	if len(p.marks) == 0 {
		return 0
	}
	return time.Duration((p.marks[0].at - p.head) * int64(time.Second) / p.bps)
}
