package dtmf

import (
	"time"
)

// ReceiverOptions configures a Receiver. The zero value is usable.
type ReceiverOptions struct {
	// ClockRate is the RTP clock rate of the negotiated telephone-event
	// payload type (its a=rtpmap rate). Default 8000.
	ClockRate int
	// EndTimeout closes an event that never sends an end packet once no
	// packet of it has arrived for this long. Default 400 ms, enough for
	// senders that pace event packets every 50 ms and lose a few.
	EndTimeout time.Duration
}

// Defaults of ReceiverOptions.
const (
	DefaultClockRate  = 8000
	DefaultEndTimeout = 400 * time.Millisecond
)

// historySize is how many recent event timestamps a Receiver remembers, so
// that late retransmissions of an earlier event are not taken for a new one.
const historySize = 16

// restartWindow is how far back (in seconds of RTP clock) a timestamp may
// jump before the Receiver takes it for a sender restart rather than a late
// packet of an old event.
const restartWindow = 10

// longSegment is the smallest duration at which an event without an end
// packet is taken to be a long event that continues in a new segment
// (RFC 4733 section 2.5.1.3: the duration field saturates at 0xFFFF units).
const longSegment = 0xF000

// Receiver turns RFC 4733 telephone-event packets of one RTP stream into key
// presses. It is not safe for concurrent use; the call's media goroutine
// owns it.
//
// One key press is one RFC 4733 event, and RFC 4733 section 2.5.1.1 requires
// every packet of an event to carry the event's start timestamp, so the
// Receiver identifies events by their RTP timestamp alone. The marker bit is
// ignored: carriers omit it, duplicate it, and it is lost with the first
// packet. Consequences:
//
//   - A digit is reported once, on the first packet received with a new
//     timestamp, whether that packet is the first of the event, a later one
//     (the first were lost) or even an end packet (all others were lost).
//     Reporting at the start, not at the end, gives the lowest latency and
//     needs no end packet at all.
//   - Further packets of the same timestamp, including the three retransmitted
//     end packets, only update the event; the last 16 timestamps are
//     remembered so late or reordered copies are dropped too.
//   - Timestamps are compared with serial-number arithmetic, so the 32-bit
//     wrap is harmless; a packet older than the newest event is dropped
//     unless it is more than 10 s older (taken as a sender restart).
//   - An event whose end packets never arrive is closed by Tick once no
//     packet has arrived for EndTimeout.
//   - A long event that outlives the 16-bit duration field continues with a
//     new segment (new timestamp = old timestamp + old duration, same code);
//     that segment is not reported as a second press.
//   - Event codes above 15 (flash, RFC 4734 tones) are remembered but not
//     reported.
type Receiver struct {
	opts ReceiverOptions

	// The current (newest) event.
	have     bool // an event has been seen
	open     bool // no end packet and no timeout yet
	ended    bool // closed by an end packet
	ts       uint32
	code     uint8
	duration uint16
	lastAt   time.Time

	history [historySize]uint32
	nhist   int
	hpos    int
}

// NewReceiver returns a Receiver for one RTP stream.
func NewReceiver(opts ReceiverOptions) *Receiver {
	if opts.ClockRate <= 0 {
		opts.ClockRate = DefaultClockRate
	}
	if opts.EndTimeout <= 0 {
		opts.EndTimeout = DefaultEndTimeout
	}
	return &Receiver{opts: opts}
}

// Reset forgets all events, for a new SSRC or a renegotiated stream.
func (r *Receiver) Reset() {
	*r = Receiver{opts: r.opts}
}

// Push takes the RTP timestamp and payload of one telephone-event packet
// received at now. It returns the key press when the packet starts a new
// event. A malformed payload returns an error and changes nothing.
func (r *Receiver) Push(ts uint32, payload []byte, now time.Time) (Event, bool, error) {
	p, err := ParsePayload(payload)
	if err != nil {
		return Event{}, false, err
	}
	ev, ok := r.PushPayload(ts, p, now)
	return ev, ok, nil
}

// PushPayload is Push for an already decoded payload.
func (r *Receiver) PushPayload(ts uint32, p Payload, now time.Time) (Event, bool) {
	if r.have && ts == r.ts {
		// Another packet of the current event: an update, a
		// retransmission, or one of the end packets.
		if !r.ended {
			r.lastAt = now
			if p.Duration > r.duration {
				r.duration = p.Duration
			}
			if p.End {
				r.open, r.ended = false, true
			}
		}
		return Event{}, false
	}
	if r.seen(ts) {
		return Event{}, false
	}
	if r.have {
		diff := int32(ts - r.ts)
		if diff < 0 && -int64(diff) <= int64(restartWindow*r.opts.ClockRate) {
			// Late packet of an event older than the current one,
			// that we never saw: reporting it now would put the
			// digits out of order.
			r.remember(ts)
			return Event{}, false
		}
		if !r.ended && r.code == p.Event && r.duration >= longSegment &&
			ts-r.ts >= uint32(r.duration)-uint32(r.opts.ClockRate/10) &&
			ts-r.ts <= uint32(r.duration)+uint32(r.opts.ClockRate/10) {
			// Next segment of a long event (RFC 4733 2.5.1.3).
			r.remember(ts)
			r.ts, r.duration, r.lastAt = ts, p.Duration, now
			r.open = !p.End
			r.ended = p.End
			return Event{}, false
		}
	}
	r.remember(ts)
	r.have, r.ts, r.code, r.duration, r.lastAt = true, ts, p.Event, p.Duration, now
	r.open, r.ended = !p.End, p.End
	d, ok := DigitForCode(p.Event)
	if !ok {
		return Event{}, false
	}
	return Event{
		Digit:        d,
		Source:       SourceRTP,
		At:           now,
		Duration:     r.units(p.Duration),
		RTPTimestamp: ts,
	}, true
}

// Tick closes the current event if it has had no packet for EndTimeout. It
// reports whether an event was closed that way (its end packets were lost).
func (r *Receiver) Tick(now time.Time) bool {
	if !r.open || now.Sub(r.lastAt) < r.opts.EndTimeout {
		return false
	}
	r.open = false
	return true
}

// Deadline returns when Tick next has work to do, if ever.
func (r *Receiver) Deadline() (time.Time, bool) {
	if !r.open {
		return time.Time{}, false
	}
	return r.lastAt.Add(r.opts.EndTimeout), true
}

// Active reports whether an event is in progress (begun, not yet ended).
func (r *Receiver) Active() bool { return r.open }

func (r *Receiver) units(d uint16) time.Duration {
	return time.Duration(d) * time.Second / time.Duration(r.opts.ClockRate)
}

func (r *Receiver) seen(ts uint32) bool {
	for i := 0; i < r.nhist; i++ {
		if r.history[i] == ts {
			return true
		}
	}
	return false
}

func (r *Receiver) remember(ts uint32) {
	r.history[r.hpos] = ts
	r.hpos = (r.hpos + 1) % historySize
	if r.nhist < historySize {
		r.nhist++
	}
}
