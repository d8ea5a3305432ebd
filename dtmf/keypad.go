package dtmf

import (
	"sync"
	"time"
)

// Clock is the time a Keypad runs on: the real clock by default, a fake
// one in tests, so the idle flush is tested without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// KeypadSink takes what a Keypad decides. Its methods are never called
// with the keypad's lock held, and never after Close returned.
type KeypadSink interface {
	// Key is each accepted key press (duplicates across sources are
	// dropped), with its digit even under the redact policy.
	Key(ev Event)
	// Text is a flush of the buffer as the policy renders it for the model
	// (redacted under redact); empty flushes are not delivered.
	Text(text string, f Flush)
	// Action is a key the route policy maps to an action.
	Action(a Action)
}

// KeypadOptions configure a Keypad. The zero value is usable.
type KeypadOptions struct {
	// Policy is model (default), redact or route.
	Policy Policy
	// IdleTimeout flushes the buffer when no key came for this long
	// (default DefaultIdleTimeout, the spec's 2.5 s).
	IdleTimeout time.Duration
	// Clock defaults to the wall clock.
	Clock Clock
}

// Keypad is a call's digit buffer with its flush rules and its own timer:
// keys from every source go in (Add), the caller's speech flushes
// (SpeechStarted), and the idle flush fires by itself. It is safe for
// concurrent use: keys arrive from the media reader, the SIP INFO reader
// and the model's goroutine.
type Keypad struct {
	sink  KeypadSink
	clock Clock

	mu        sync.Mutex
	policy    Policy
	collector *Collector
	timer     Timer
	closed    bool
	// deliver serializes the sink's calls so a flush never overtakes the
	// key that caused it.
	deliver sync.Mutex
}

// NewKeypad returns a keypad that reports to sink.
func NewKeypad(sink KeypadSink, opts KeypadOptions) (*Keypad, error) {
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	col, err := NewCollector(CollectorOptions{Policy: opts.Policy, Buffer: BufferOptions{IdleTimeout: opts.IdleTimeout}})
	if err != nil {
		return nil, err
	}
	return &Keypad{sink: sink, clock: opts.Clock, policy: opts.Policy, collector: col}, nil
}

// Policy is the keypad's policy.
func (k *Keypad) Policy() Policy { return k.policy }

// Add takes one key press from any source.
func (k *Keypad) Add(ev Event) {
	k.deliver.Lock()
	defer k.deliver.Unlock()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	res := k.collector.Add(ev)
	k.rearmLocked()
	k.mu.Unlock()
	if !res.Accepted {
		return
	}
	k.sink.Key(res.Key)
	if res.HasFlush {
		k.text(res.Flush)
	}
	if res.HasAction {
		k.sink.Action(res.Action)
	}
}

// SpeechStarted flushes what is buffered: the caller moved on to talking.
func (k *Keypad) SpeechStarted() {
	k.deliver.Lock()
	defer k.deliver.Unlock()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	f, ok := k.collector.SpeechStarted(k.clock.Now())
	k.rearmLocked()
	k.mu.Unlock()
	if ok {
		k.text(f)
	}
}

// Close stops the timer; nothing is delivered once it returned. It is
// idempotent.
func (k *Keypad) Close() {
	k.deliver.Lock()
	defer k.deliver.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.timer != nil {
		k.timer.Stop()
	}
}

// rearmLocked sets the timer to the next flush deadline; k.mu is held.
func (k *Keypad) rearmLocked() {
	at, ok := k.collector.Deadline()
	if !ok || k.closed {
		if k.timer != nil {
			k.timer.Stop()
		}
		return
	}
	d := at.Sub(k.clock.Now())
	if k.timer == nil {
		k.timer = k.clock.AfterFunc(d, k.tick)
	} else {
		k.timer.Reset(d)
	}
}

// tick is the idle timer firing.
func (k *Keypad) tick() {
	k.deliver.Lock()
	defer k.deliver.Unlock()
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	f, ok := k.collector.Tick(k.clock.Now())
	k.rearmLocked()
	k.mu.Unlock()
	if ok {
		k.text(f)
	}
}

func (k *Keypad) text(f Flush) {
	if text := k.policy.ModelText(f); text != "" {
		k.sink.Text(text, f)
	}
}
