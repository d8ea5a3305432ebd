package conversation

import (
	"context"
	"time"

	"switchboard/call"
	"switchboard/dtmf"
)

// Loopback is the line-test conversation (the agent engine "loopback"):
// the caller hears their own audio after a fixed delay. It checks a
// deployment end to end (SIP, RTP both ways, the jitter buffer, the pacer)
// without any model. It takes the leg's own audio (call.LegFormat): a G.711
// caller's bytes are passed through untouched, nothing is resampled.
type Loopback struct {
	// Record asks for the line test to be recorded (the agent's setting).
	Record bool
	delay  time.Duration
	queue  chan echoFrame
	free   chan []byte
}

type echoFrame struct {
	at    time.Time
	audio []byte
}

// DefaultLoopbackDelay is the loopback's delay: long enough to hear
// one's own words back as an echo, not as sidetone.
const DefaultLoopbackDelay = 500 * time.Millisecond

var _ call.Conversation = (*Loopback)(nil)

// NewLoopback returns a loopback conversation with the given delay
// (default DefaultLoopbackDelay).
func NewLoopback(delay time.Duration) *Loopback {
	if delay <= 0 {
		delay = DefaultLoopbackDelay
	}
	// Room for the delay plus one second of 10 ms frames.
	n := int((delay+time.Second)/(10*time.Millisecond)) + 1
	e := &Loopback{delay: delay, queue: make(chan echoFrame, n), free: make(chan []byte, n)}
	return e
}

// Format is the leg's own: the caller hears exactly what they sent.
func (e *Loopback) Format() call.AudioFormat { return call.LegFormat }

// Keypad is the default policy; the loopback ignores keys.
func (e *Loopback) Keypad() call.KeypadSettings { return call.KeypadSettings{} }

// Recording is the agent's recording setting.
func (e *Loopback) Recording() bool { return e.Record }

// Key ignores a key.
func (e *Loopback) Key(dtmf.Event) {}

// Digits ignores flushed digits.
func (e *Loopback) Digits(string) {}

// Prepare is immediate: the loopback needs nothing before answer.
func (e *Loopback) Prepare(context.Context, call.Phone) error { return nil }

// Progress ignores a placed call's dial: the line test has nothing to
// tell.
func (e *Loopback) Progress(call.Progress) {}

// Opened does nothing: the line test repeats the callee from the start.
func (e *Loopback) Opened(call.Opening) {}

// Audio queues a copy of the frame; when the queue is full the frame is
// dropped rather than blocking the media goroutine.
func (e *Loopback) Audio(audio []byte) {
	var buf []byte
	select {
	case buf = <-e.free:
	default:
	}
	buf = append(buf[:0], audio...)
	select {
	case e.queue <- echoFrame{at: time.Now(), audio: buf}:
	default:
	}
}

// Run plays each frame back once it is delay old.
func (e *Loopback) Run(ctx context.Context, p call.Phone) error {
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		var f echoFrame
		select {
		case <-ctx.Done():
			return nil
		case f = <-e.queue:
		}
		if wait := time.Until(f.at.Add(e.delay)); wait > 0 {
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		p.Play("loopback", f.audio)
		select {
		case e.free <- f.audio:
		default:
		}
	}
}

// Close releases nothing: the loopback owns no resources.
func (e *Loopback) Close() error { return nil }
