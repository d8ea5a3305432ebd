package media

import (
	"fmt"
	"sync"
)

// Loop is audio a playout plays over and over while nothing else is
// queued: hold music, a ringback. Its audio is converted once per form a
// playout holds (G.711 code words of either law, PCM at a rate) and the
// conversions are shared by every call that plays it, so a thousand calls
// on hold cost one copy.
type Loop struct {
	pcm  []int16
	rate int

	mu    sync.Mutex
	coded map[string][]byte
	at    map[int][]int16
}

// minLoop is the shortest loop: a frame of 20 ms at 8 kHz.
const minLoop = ClockRate / 50

// NewLoop returns a loop of pcm at rate (8, 16, 24 or 48 kHz), at least
// 20 ms long. The samples are not copied: they must not change.
func NewLoop(pcm []int16, rate int) (*Loop, error) {
	if err := PCM16(rate).Check(); err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	if len(pcm)*ClockRate/rate < minLoop {
		return nil, fmt.Errorf("loop: %d samples at %d Hz is shorter than 20 ms", len(pcm), rate)
	}
	return &Loop{pcm: pcm, rate: rate, coded: map[string][]byte{}, at: map[int][]int16{rate: pcm}}, nil
}

// Duration is the loop's length.
func (l *Loop) Duration() float64 { return float64(len(l.pcm)) / float64(l.rate) }

// pcmAt is the loop resampled to rate.
func (l *Loop) pcmAt(rate int) []int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.at[rate]; ok {
		return p
	}
	rs, err := NewResampler(l.rate, rate)
	if err != nil {
		return nil
	}
	p := rs.Process(make([]int16, 0, len(l.pcm)*rate/l.rate+rs.Taps()), l.pcm)
	l.at[rate] = p
	return p
}

// codedIn is the loop encoded in c (G.711).
func (l *Loop) codedIn(c Codec) []byte {
	pcm := l.pcmAt(ClockRate)
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.coded[c.Name]; ok {
		return b
	}
	b := c.EncodeFrame(make([]byte, 0, len(pcm)), pcm)
	l.coded[c.Name] = b
	return b
}

// filler is a playout's position in its loop.
type filler struct {
	loop  *Loop
	pcm   []int16
	coded []byte
	pos   int
}

// SetFiller makes the playout play l whenever its queue runs short (hold
// audio), from l's start; nil stops it. Queued audio still goes first:
// a prompt written meanwhile plays, then the loop goes on.
func (q *Playout) SetFiller(l *Loop) {
	var f *filler
	fm := q.form()
	if l != nil {
		f = fillerIn(l, fm) // converted outside the lock the pacer takes
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if f != nil && q.gen != fm.gen {
		f = q.fillerOf(l)
	}
	q.fill = f
}

// fillerOf is l from its start in the form q holds (q.mu held).
func (q *Playout) fillerOf(l *Loop) *filler {
	return fillerIn(l, form{codec: q.codec, coded: q.coded != nil, rate: q.rate})
}

func fillerIn(l *Loop, fm form) *filler {
	f := &filler{loop: l}
	if fm.coded {
		f.coded = l.codedIn(fm.codec)
	} else {
		f.pcm = l.pcmAt(fm.rate)
	}
	return f
}

// takeLoop appends n samples of the loop to dst, wrapping around.
func takeLoop[T int16 | byte](dst []T, src []T, pos *int, n int) []T {
	for n > 0 && len(src) > 0 {
		k := min(n, len(src)-*pos)
		dst = append(dst, src[*pos:*pos+k]...)
		*pos = (*pos + k) % len(src)
		n -= k
	}
	return dst
}
