package dtmf

import (
	"time"
)

// BufferOptions configures a Buffer. The zero value is usable.
type BufferOptions struct {
	// IdleTimeout flushes the buffered digits when no new key has arrived
	// for this long. Default 2.5 s (the spec's DTMF flush idle).
	IdleTimeout time.Duration
	// MaxDigits flushes the buffer when it holds this many digits, so a
	// stuck key or a flood cannot grow it without bound. Default 64.
	MaxDigits int
}

// Defaults of BufferOptions.
const (
	DefaultIdleTimeout = 2500 * time.Millisecond
	DefaultMaxDigits   = 64
)

// FlushReason says why buffered digits were flushed.
type FlushReason uint8

// Reasons for a flush.
const (
	// FlushHash: the caller pressed #. The # is not part of Flush.Digits.
	FlushHash FlushReason = iota + 1
	// FlushIdle: no key for IdleTimeout.
	FlushIdle
	// FlushSpeech: the caller started speaking (speech_started).
	FlushSpeech
	// FlushFull: the buffer reached MaxDigits.
	FlushFull
)

// String returns a short lowercase name, suitable as a log field or metric label.
func (r FlushReason) String() string {
	switch r {
	case FlushHash:
		return "hash"
	case FlushIdle:
		return "idle"
	case FlushSpeech:
		return "speech"
	case FlushFull:
		return "full"
	default:
		return "unknown"
	}
}

// Flush is a group of digits to hand to the model as one user text message.
type Flush struct {
	// Digits are the keys in the order pressed, without the terminating #
	// of a FlushHash. Empty only for a FlushHash of a lone #.
	Digits string
	// Reason says what ended the group.
	Reason FlushReason
	// At is when the flush happened.
	At time.Time
}

// Buffer collects key presses and decides when to flush them to the model:
// on #, after IdleTimeout without a new key, when the caller starts
// speaking, or when MaxDigits are held. It owns no timer: the call owner
// arms one for Deadline and calls Tick. It is not safe for concurrent use.
type Buffer struct {
	opts   BufferOptions
	digits []byte
	last   time.Time
}

// NewBuffer returns an empty Buffer.
func NewBuffer(opts BufferOptions) *Buffer {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxDigits <= 0 {
		opts.MaxDigits = DefaultMaxDigits
	}
	return &Buffer{opts: opts, digits: make([]byte, 0, opts.MaxDigits)}
}

// Add buffers one key press. A # flushes what is buffered (even nothing: a
// lone # is itself an answer, "press # to confirm"), without the #. Keys
// that are not DTMF digits are ignored.
func (b *Buffer) Add(ev Event) (Flush, bool) {
	d, ok := normalizeDigit(ev.Digit)
	if !ok {
		return Flush{}, false
	}
	if d == '#' {
		return b.flush(FlushHash, ev.At), true
	}
	b.digits = append(b.digits, d)
	b.last = ev.At
	if len(b.digits) >= b.opts.MaxDigits {
		return b.flush(FlushFull, ev.At), true
	}
	return Flush{}, false
}

// SpeechStarted flushes the buffered digits because the caller started
// speaking (the model's input_audio_buffer.speech_started), so the digits
// reach the model before what the caller says. Nothing is flushed when the
// buffer is empty.
func (b *Buffer) SpeechStarted(now time.Time) (Flush, bool) {
	if len(b.digits) == 0 {
		return Flush{}, false
	}
	return b.flush(FlushSpeech, now), true
}

// Tick flushes the buffered digits when IdleTimeout has passed since the last
// key. Nothing is flushed when the buffer is empty.
func (b *Buffer) Tick(now time.Time) (Flush, bool) {
	if len(b.digits) == 0 || now.Sub(b.last) < b.opts.IdleTimeout {
		return Flush{}, false
	}
	return b.flush(FlushIdle, now), true
}

// Deadline returns when Tick will flush, if digits are buffered.
func (b *Buffer) Deadline() (time.Time, bool) {
	if len(b.digits) == 0 {
		return time.Time{}, false
	}
	return b.last.Add(b.opts.IdleTimeout), true
}

// Len returns how many digits are buffered.
func (b *Buffer) Len() int { return len(b.digits) }

func (b *Buffer) flush(r FlushReason, at time.Time) Flush {
	f := Flush{Digits: string(b.digits), Reason: r, At: at}
	b.digits = b.digits[:0]
	return f
}
