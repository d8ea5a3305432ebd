package conversation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"switchboard/realtime"
)

// ErrNoChannel means a call has no event channel to give: it is not
// routed (or over), it is the loopback line test, or its channel is
// taken.
var ErrNoChannel = errors.New("conversation: no event channel for this call")

// channelBuffer is how many events may wait for a slow caller's channel
// before it is dropped.
const channelBuffer = 1024

// Channel opens the caller's own event channel on call id (a browser's
// "oai-events" data channel): for a direct session it is the session's
// controller (Attach, then Start: a ringing call proceeds); for an
// agent's call it sees the agent's server events (no audio) and its
// client events go to the agent's model session. A webhook-routed call
// has none: its controller is the webhook's. One channel per call.
func (reg *Registry) Channel(id string) (realtime.Session, error) {
	r, ok := reg.Get(id)
	if !ok {
		return nil, fmt.Errorf("%w: call %s is not routed", ErrNoChannel, id)
	}
	switch {
	case r.cc != nil && !r.cc.opts.direct:
		return nil, fmt.Errorf("%w: a webhook-routed call is steered by its webhook's controller", ErrNoChannel)
	case r.cc != nil:
		s, err := r.cc.Attach()
		if err != nil {
			return nil, err
		}
		s.Start()
		return s, nil
	case r.b != nil:
		return r.b.openChannel()
	}
	return nil, fmt.Errorf("%w: the line test has no events", ErrNoChannel)
}

// agentChannel is the caller's event channel on an agent's call.
type agentChannel struct {
	b      *bridge
	events chan realtime.Event
	done   chan struct{}

	mu       sync.Mutex
	ended    bool
	reason   string
	warned   bool
	sent     atomic.Uint64
	received atomic.Uint64
}

var (
	_ realtime.Session = (*agentChannel)(nil)
	_ Observer         = (*agentChannel)(nil)
)

// openChannel makes the agent's call observable by its caller: it
// starts with a session.created carrying the agent's configuration.
func (b *bridge) openChannel() (*agentChannel, error) {
	c := &agentChannel{b: b, events: make(chan realtime.Event, channelBuffer), done: make(chan struct{})}
	if !b.observer.CompareAndSwap(nil, &observerBox{c}) {
		return nil, fmt.Errorf("%w: another channel observes this call", ErrNoChannel)
	}
	c.ServerEvent(&realtime.SessionCreated{Session: b.config()})
	return c, nil
}

// ServerEvent queues one of the agent's server events (not its audio,
// which the caller hears); a channel too slow to keep up is dropped.
func (c *agentChannel) ServerEvent(ev realtime.Event) {
	if _, audio := ev.(*realtime.ResponseOutputAudioDelta); audio {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	select {
	case c.events <- ev:
		c.received.Add(1)
	default:
		c.endLocked("events backed up: the channel is too slow")
	}
}

// Send hands a client event to the agent's model session.
func (c *agentChannel) Send(ctx context.Context, ev realtime.Event) error {
	select {
	case <-c.done:
		return realtime.ErrClosed
	default:
	}
	s := c.b.session()
	if s == nil {
		return realtime.ErrClosed
	}
	if err := s.Send(ctx, ev); err != nil {
		return fmt.Errorf("channel event %s: %w", ev.EventType(), err)
	}
	c.sent.Add(1)
	return nil
}

// AppendAudio refuses audio over the channel: the call's audio is the
// caller's media. The caller gets one error event.
func (c *agentChannel) AppendAudio([]byte) error {
	c.mu.Lock()
	warned := c.warned
	c.warned = true
	c.mu.Unlock()
	if !warned {
		c.ServerEvent(&realtime.ErrorEvent{Error: realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: "audio_not_accepted",
			Message: "input_audio_buffer.append is ignored on a call: the caller's audio goes to the model"}})
	}
	return nil
}

// Events returns the channel's server events.
func (c *agentChannel) Events() <-chan realtime.Event { return c.events }

// Done is closed when the channel ended.
func (c *agentChannel) Done() <-chan struct{} { return c.done }

// Err says why the channel ended (nil while it runs).
func (c *agentChannel) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		return nil
	}
	return fmt.Errorf("%w: %s", realtime.ErrClosed, c.reason)
}

// Stats counts the events both ways.
func (c *agentChannel) Stats() realtime.Stats {
	return realtime.Stats{EventsSent: c.sent.Load(), EventsReceived: c.received.Load()}
}

// Close stops observing the call; it is idempotent.
func (c *agentChannel) Close() error {
	c.b.observer.CompareAndSwap(c.box(), nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked("channel closed")
	return nil
}

// box returns the bridge's observer box if it holds c.
func (c *agentChannel) box() *observerBox {
	if v := c.b.observer.Load(); v != nil && v.o == Observer(c) {
		return v
	}
	return nil
}

func (c *agentChannel) endLocked(reason string) {
	if c.ended {
		return
	}
	c.ended, c.reason = true, reason
	close(c.events)
	close(c.done)
}
