package media

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Writer queues audio in one Format on a session's playout, converting it
// once on the way to what the playout holds (G.711 code words for a G.711
// leg, PCM at the encoder's rate for G.722 and Opus, which the pacer
// encodes frame by frame):
//
//	PCMU -> Playout(PCMU)                                (relay)
//	PCM16LE(24k) -> Resample(24k->8k) -> PCMU(encode) -> Playout(PCMU)
//	PCMU(decode) -> Resample(8k->24k) -> Playout(24k)      (an Opus leg)
//
// A PCM16 write may split a sample across two writes; the odd byte is
// carried over. A Writer is safe for concurrent use, but its audio is one
// stream: two goroutines writing interleave their pieces.
type Writer struct {
	q      *Playout
	format Format
	law    Codec // format's G.711 law
	law711 bool
	rs     *Resampler // format's rate to the playout's; nil: same rate
	// live bounds what is queued for a relay between two clocks (another
	// leg's frames): audio beyond it is dropped, not queued.
	live  time.Duration
	chain string
	// gen is the playout's form the conversion was made for.
	gen int

	mu       sync.Mutex
	in, out  []int16
	carry    byte
	hasCarry bool
	// held is a live writer's first frame after the queue ran dry, kept
	// back until the next one comes (see Write).
	held []byte
	// takeOver: the first frame a live writer queues flushes what the
	// queue held (Restart), so the old audio plays until the new is ready.
	takeOver bool
}

// WriterOptions shape a Writer.
type WriterOptions struct {
	// Live makes a relay of another leg's frames, which come on that
	// leg's clock, not the pacer's: a write that would queue more than
	// Live is dropped (the relay never builds up a delay), and when the
	// queue has run dry the first frame is held back until the next one
	// comes, so the pacer always finds a frame whatever the phase between
	// the two clocks (a frame of latency instead of a gap every time the
	// phases cross).
	Live time.Duration
}

// Writer returns a writer of audio in format f to the session's playout.
func (s *Session) Writer(f Format, o WriterOptions) (*Writer, error) {
	return NewWriter(s.playout, f, o)
}

// NewWriter returns a writer of audio in format f to q.
func NewWriter(q *Playout, f Format, o WriterOptions) (*Writer, error) {
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	w := &Writer{q: q, format: f, live: o.Live}
	w.law, w.law711 = f.G711()
	if err := w.setup(q.form()); err != nil {
		return nil, err
	}
	return w, nil
}

// setup makes the conversion from the writer's format to what the
// playout holds in form fm (w.mu held, or before use).
func (w *Writer) setup(fm form) error {
	f := w.format
	w.rs, w.gen = nil, fm.gen
	stages := []string{f.String()}
	switch {
	case w.law711 && fm.coded:
		if !w.law.sameLaw(fm.codec) {
			stages = append(stages, fm.codec.Name)
		}
	case w.law711:
		stages[0] = w.law.Name + "(decode)"
		if fm.rate != ClockRate {
			w.rs, _ = NewResampler(ClockRate, fm.rate)
		}
	default:
		if fm.rate != f.Rate {
			var err error
			if w.rs, err = NewResampler(f.Rate, fm.rate); err != nil {
				return fmt.Errorf("writer: %w", err)
			}
		}
	}
	if w.rs != nil {
		stages = append(stages, w.rs.String())
	}
	if fm.coded && !w.law711 {
		stages = append(stages, fm.codec.Name+"(encode)")
	}
	playout := "Playout"
	if fm.coded {
		playout = "Playout(" + fm.codec.Name + ")"
	}
	w.chain = strings.Join(append(stages, playout), " -> ")
	return nil
}

// refresh follows a change of the playout's form (a deferred session's
// codec settled): w.mu held.
func (w *Writer) refresh() form {
	fm := w.q.form()
	if fm.gen != w.gen {
		if err := w.setup(fm); err != nil {
			w.rs = nil // cannot happen: the playout's rates are the resampler's
		}
		w.carry, w.hasCarry = 0, false
	}
	return fm
}

// Format is the audio the writer takes.
func (w *Writer) Format() Format { return w.format }

// String shows the chain, e.g.
// "PCM16LE(24k) -> Resample(24k->8k) -> PCMU(encode) -> Playout(PCMU)".
func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refresh()
	return w.chain
}

// Write queues b (audio in the writer's format) as audio of item itemID,
// 20 ms at a time, so a long write (a greeting rendered at once) goes
// through the resampler in pieces and its buffers stay a frame long.
func (w *Writer) Write(itemID string, b []byte) {
	if len(b) == 0 {
		return
	}
	if w.live > 0 {
		if b = w.prime(itemID, b); b == nil {
			return
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if fm := w.refresh(); fm.coded && w.law711 {
		w.q.writeCodedAt(itemID, w.law, b, fm.gen)
		return
	}
	piece := 2 * w.format.Rate / 50
	if w.law711 {
		piece = ClockRate / 50
	}
	for len(b) > piece {
		w.write(itemID, b[:piece])
		b = b[piece:]
	}
	w.write(itemID, b)
}

// prime applies Live to one write: nil when it is held back or dropped,
// else what to write (the held frame first).
func (w *Writer) prime(itemID string, b []byte) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	queued := w.q.Len()
	switch {
	case queued >= w.live && !w.takeOver:
		return nil
	case queued == 0 && w.held == nil, w.takeOver && w.held == nil:
		w.held = append(w.held[:0:0], b...)
		return nil
	case w.held != nil:
		out := append(w.held, b...)
		w.held = nil
		if w.takeOver {
			w.takeOver = false
			w.q.Flush()
		}
		return out
	}
	return b
}

// Restart makes a live writer the playout's new source: what the queue
// holds (another source's audio) keeps playing until the writer has its
// first two frames, which then replace it at once. So a switch from one
// source to a live one leaves at most the pacer's own frame of silence.
func (w *Writer) Restart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held, w.takeOver = nil, true
}

// WritePCM queues samples at the writer's rate (audio rendered locally,
// a relay's decoded frames), like Write.
func (w *Writer) WritePCM(itemID string, pcm []int16) {
	if len(pcm) == 0 || (w.live > 0 && w.q.Len() >= w.live) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refresh()
	piece := w.format.Rate / 50
	for len(pcm) > piece {
		w.queue(itemID, pcm[:piece])
		pcm = pcm[piece:]
	}
	w.queue(itemID, pcm)
}

// write converts one piece (w.mu held).
func (w *Writer) write(itemID string, b []byte) {
	w.in = w.in[:0]
	if w.law711 {
		w.in = w.law.DecodeFrame(w.in, b)
	} else {
		if w.hasCarry {
			w.in = append(w.in, int16(uint16(w.carry)|uint16(b[0])<<8))
			b = b[1:]
			w.hasCarry = false
		}
		even := len(b) &^ 1
		w.in = DecodePCM16LE(w.in, b[:even])
		if even < len(b) {
			w.carry, w.hasCarry = b[even], true
		}
	}
	w.queue(itemID, w.in)
}

// queue resamples pcm to the playout's rate and queues it (w.mu held).
func (w *Writer) queue(itemID string, pcm []int16) {
	if w.rs != nil {
		w.out = w.rs.Process(w.out[:0], pcm)
		pcm = w.out
	}
	w.q.writeAt(itemID, pcm, w.gen)
}

// Reset drops the carried byte and the resampler's history, after a
// barge-in flush, so the next response starts clean.
func (w *Writer) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hasCarry = false
	w.held, w.takeOver = nil, false
	if w.rs != nil {
		w.rs.Reset()
	}
}
