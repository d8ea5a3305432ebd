package dtmf

import (
	"fmt"
	"time"
)

// CollectorOptions configures a Collector.
type CollectorOptions struct {
	// Policy is the agent's or number's DTMF policy.
	Policy Policy
	// Buffer configures the flush rule.
	Buffer BufferOptions
	// Merger configures the de-duplication across sources.
	Merger MergerOptions
}

// Result is what one key press leads to. The call owner sends Key to the
// controller (input_audio_buffer.dtmf_event_received) when Accepted, runs
// Action when HasAction, and sends Policy.ModelText(Flush) to the model
// when HasFlush.
type Result struct {
	// Accepted is false for a copy of a press already seen from another
	// source; nothing else is set then.
	Accepted bool
	// Key is the accepted press.
	Key Event
	// Action is the routed action of the key, under ModeRoute.
	Action    Action
	HasAction bool
	// Flush is the digits to send to the model.
	Flush    Flush
	HasFlush bool
}

// Collector is the per-call DTMF pipeline after the sources: it merges the
// sources, applies the policy's routes and buffers the rest for the model.
// It owns no timer: the call owner arms one for Deadline and calls Tick. It
// is not safe for concurrent use.
type Collector struct {
	policy Policy
	merger *Merger
	buffer *Buffer
}

// NewCollector returns a Collector, or an error if the policy is invalid.
func NewCollector(opts CollectorOptions) (*Collector, error) {
	if err := opts.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("new collector: %w", err)
	}
	return &Collector{
		policy: opts.Policy,
		merger: NewMerger(opts.Merger),
		buffer: NewBuffer(opts.Buffer),
	}, nil
}

// Policy returns the collector's policy (for ModelText and LogDigits).
func (c *Collector) Policy() Policy { return c.policy }

// Add takes a key press from any source.
//
// A routed key (ModeRoute) acts at once and is not buffered; what was
// buffered before it is flushed first, so the model does not later receive
// digits typed before, say, a transfer. Other keys go to the Buffer.
func (c *Collector) Add(ev Event) Result {
	d, ok := normalizeDigit(ev.Digit)
	if !ok {
		return Result{}
	}
	ev.Digit = d
	if !c.merger.Add(ev) {
		return Result{}
	}
	r := Result{Accepted: true, Key: ev}
	if a, ok := c.policy.Route(d); ok {
		r.Action, r.HasAction = a, true
		if c.buffer.Len() > 0 {
			r.Flush = c.buffer.flush(FlushIdle, ev.At)
			r.HasFlush = true
		}
		return r
	}
	r.Flush, r.HasFlush = c.buffer.Add(ev)
	return r
}

// SpeechStarted flushes the buffer because the caller started speaking.
func (c *Collector) SpeechStarted(now time.Time) (Flush, bool) {
	return c.buffer.SpeechStarted(now)
}

// Tick flushes the buffer after the idle timeout.
func (c *Collector) Tick(now time.Time) (Flush, bool) { return c.buffer.Tick(now) }

// Deadline returns when Tick will next flush, if digits are buffered.
func (c *Collector) Deadline() (time.Time, bool) { return c.buffer.Deadline() }
