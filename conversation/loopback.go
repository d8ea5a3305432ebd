package conversation

import (
	"context"
	"sync"
	"time"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
)

// Loopback is the line-test conversation (the agent engine "loopback"):
// the caller hears their own audio after a fixed delay. It checks a
// deployment end to end (SIP, RTP both ways, the jitter buffer, the pacer)
// without any model. It takes the leg's own audio (call.LegFormat): a G.711
// caller's bytes are passed through untouched, nothing is resampled.
//
// The delay is a FIFO of the caller's audio filled on the media goroutine:
// each frame in pushes the audio that is now delay old out to the playout,
// so the loopback needs no goroutine, timer or channel of its own.
type Loopback struct {
	// Record asks for the line test to be recorded (the agent's setting).
	Record bool
	delay  time.Duration

	mu    sync.Mutex
	call  call.Phone
	phone call.Phone // the call while prepared: nil once closed
	fifo  []byte     // queued audio is fifo[head:]
	head  int
	limit int // bytes of delay at the call's format
}

// DefaultLoopbackDelay is the loopback's delay: long enough to hear
// one's own words back as an echo, not as sidetone.
const DefaultLoopbackDelay = 500 * time.Millisecond

var _ call.Conversation = (*Loopback)(nil)

// NewLoopback returns the loopback conversation of the call on p with
// the given delay (default DefaultLoopbackDelay).
func NewLoopback(p call.Phone, delay time.Duration) *Loopback {
	if delay <= 0 {
		delay = DefaultLoopbackDelay
	}
	return &Loopback{delay: delay, call: p}
}

// Format is the leg's own: the caller hears exactly what they sent.
func (e *Loopback) Format() media.Format { return call.LegFormat }

// Keypad is the default policy; the loopback ignores keys.
func (e *Loopback) Keypad() call.KeypadSettings { return call.KeypadSettings{} }

// Recording is the agent's recording setting.
func (e *Loopback) Recording() bool { return e.Record }

// Key ignores a key.
func (e *Loopback) Key(dtmf.Event) {}

// Prepare sizes the delay for the call's format.
func (e *Loopback) Prepare(context.Context) error {
	limit := int(int64(e.call.Format().BytesPerSecond()) * int64(e.delay) / int64(time.Second))
	e.mu.Lock()
	defer e.mu.Unlock()
	e.phone, e.limit = e.call, limit
	e.fifo = make([]byte, 0, 2*limit+4096)
	return nil
}

// Progress ignores a placed call's dial: the line test has nothing to
// tell.
func (e *Loopback) Progress(call.Progress) {}

// Opened does nothing: the line test repeats the callee from the start.
func (e *Loopback) Opened(call.Opening) {}

// Audio queues the frame and plays what is now delay old (media
// goroutine; it does not block or allocate).
func (e *Loopback) Audio(audio []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.phone == nil {
		return
	}
	if e.head > 0 && len(e.fifo)+len(audio) > cap(e.fifo) {
		e.fifo = e.fifo[:copy(e.fifo, e.fifo[e.head:])]
		e.head = 0
	}
	e.fifo = append(e.fifo, audio...)
	if over := len(e.fifo) - e.head - e.limit; over > 0 {
		e.phone.Play("loopback", e.fifo[e.head:e.head+over])
		e.head += over
	}
}

// Run waits for the call's end: the audio flows on the media goroutine.
func (e *Loopback) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Close drops the delay's audio (the call may outlive its conversation
// in memory a while: its SIP transactions keep it for their timers).
func (e *Loopback) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.phone, e.fifo, e.head = nil, nil, 0
	return nil
}
