package conversation

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"switchboard/realtime"
)

// ControllerSession is what a controller's WebSocket sees of a call: a
// realtime.Session whose Send goes to the model (a session.update is also
// kept for a reconnect) and whose Events are the model's server events
// without the audio, plus the appliance's own events.
type ControllerSession struct {
	cc     *Controlled
	events chan realtime.Event
	done   chan struct{}

	mu       sync.Mutex
	started  bool
	ended    bool
	reason   string
	warned   bool
	sent     atomic.Uint64
	received atomic.Uint64
	// opened: the session.created went out; held keeps what came
	// before it. conv: the conversation.created went out.
	opened, conv bool
	held         []realtime.Event
}

var _ realtime.Session = (*ControllerSession)(nil)

// Start begins the session: a ringing call proceeds to open the model
// session and answer. The controller's events begin with the model
// session's own session.created (the session in force, as complete as a
// direct session's) and conversation.created, once each: at once when
// the model session is open, else as soon as it is (see
// ControllerSession.deliver); then the call's state.
func (s *ControllerSession) Start() {
	cc := s.cc
	cc.mu.Lock()
	s.started, cc.decided = true, true
	cc.mu.Unlock()
	cc.greet(s)
	st := cc.phone.Snapshot().State
	s.deliver(cc.stateEvent(st, ""))
	cc.attachOne.Do(func() { close(cc.attached) })
	cc.log.Info().Str("state", string(st)).Msg("controller attached")
}

// deliver queues ev; a controller too slow to keep up is dropped rather
// than slow the call. The session starts with one session.created: what
// comes before it waits for it; a second session.created or
// conversation.created (a model session reopened) is not passed on.
func (s *ControllerSession) deliver(ev realtime.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	switch ev.(type) {
	case *realtime.SessionCreated:
		if s.opened {
			return
		}
		s.opened = true
		s.push(ev)
		for _, h := range s.held {
			s.push(h)
		}
		s.held = nil
		return
	case *realtime.ConversationCreated:
		if s.conv {
			return
		}
		s.conv = true
	}
	if !s.opened {
		if len(s.held) >= cap(s.events) {
			s.endLocked("controller too slow: events backed up")
			return
		}
		s.held = append(s.held, ev)
		return
	}
	s.push(ev)
}

// push queues ev (s.mu held).
func (s *ControllerSession) push(ev realtime.Event) {
	if s.ended {
		return
	}
	select {
	case s.events <- ev:
		s.received.Add(1)
	default:
		s.endLocked("controller too slow: events backed up")
	}
}

// end closes the event stream with reason (sent in the close frame).
func (s *ControllerSession) end(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(reason)
}

func (s *ControllerSession) endLocked(reason string) {
	if s.ended {
		return
	}
	// What waited for a session.created that never came (the model
	// session could not be opened) still goes out, before the close.
	for _, h := range s.held {
		select {
		case s.events <- h:
		default:
		}
	}
	s.held = nil
	s.ended, s.reason = true, reason
	close(s.events)
	close(s.done)
}

// Send forwards a client event to the model session, once it is open.
func (s *ControllerSession) Send(ctx context.Context, ev realtime.Event) error {
	cc := s.cc
	if u, ok := ev.(*realtime.SessionUpdate); ok {
		cc.b.mergeConfig(u.Session)
		if a := u.Session.Audio; a != nil {
			if a.Input != nil && a.Input.Format != nil {
				a.Input.Format = cc.b.modelFormat()
			}
			if a.Output != nil && a.Output.Format != nil {
				a.Output.Format = cc.b.modelFormat()
			}
		}
	}
	select {
	case <-cc.ready:
	case <-s.done:
		return realtime.ErrClosed
	case <-cc.over:
		return realtime.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	ms := cc.b.session()
	if ms == nil {
		return realtime.ErrClosed
	}
	if err := ms.Send(ctx, ev); err != nil {
		return fmt.Errorf("controller event %s: %w", ev.EventType(), err)
	}
	s.sent.Add(1)
	return nil
}

// AppendAudio refuses the controller's audio: on a phone call the audio
// comes from the caller. The controller gets one error event.
func (s *ControllerSession) AppendAudio([]byte) error {
	s.mu.Lock()
	warned := s.warned
	s.warned = true
	s.mu.Unlock()
	if !warned {
		s.deliver(s.cc.errorEvent("audio_not_accepted", "input_audio_buffer.append is ignored on a phone call: the caller's audio goes to the model"))
	}
	return nil
}

// Events returns the controller's events.
func (s *ControllerSession) Events() <-chan realtime.Event { return s.events }

// Done is closed when the controller's session ended.
func (s *ControllerSession) Done() <-chan struct{} { return s.done }

// Err says why the session ended (nil while it runs).
func (s *ControllerSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		return nil
	}
	return fmt.Errorf("%w: %s", realtime.ErrClosed, s.reason)
}

// CloseReason is the text of the WebSocket close frame (the call's end,
// or why the controller was dropped).
func (s *ControllerSession) CloseReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Stats counts the events both ways.
func (s *ControllerSession) Stats() realtime.Stats {
	return realtime.Stats{EventsSent: s.sent.Load(), EventsReceived: s.received.Load()}
}

// Close detaches the controller; the call goes on for the grace time.
// It is idempotent.
func (s *ControllerSession) Close() error {
	s.end("controller detached")
	s.cc.detach(s)
	return nil
}

// modelOpened records the model session's opening (Prepare, once it is
// open) and sends the attached controller its session.created.
func (cc *Controlled) modelOpened() {
	cc.mu.Lock()
	cc.modelOpen, cc.modelCfg = true, cc.b.openedCfg.Clone()
	cur := cc.cur
	cc.mu.Unlock()
	if cur != nil {
		cc.greet(cur)
	}
}

// keepOpening follows the model session's configuration and keeps its
// conversation.created, for the controllers that attach later.
func (cc *Controlled) keepOpening(ev realtime.Event) {
	switch e := ev.(type) {
	case *realtime.SessionCreated:
		cfg := e.Session.Clone()
		cc.mu.Lock()
		cc.modelCfg = cfg
		cc.mu.Unlock()
	case *realtime.SessionUpdated:
		cfg := e.Session.Clone()
		cc.mu.Lock()
		cc.modelCfg = cfg
		cc.mu.Unlock()
	case *realtime.ConversationCreated:
		c := *e
		cc.mu.Lock()
		cc.modelConv = &c
		cc.mu.Unlock()
	}
}

// greet sends s the model session's opening, when it is open: its
// session.created with the session in force, and its conversation.created
// once the model sent it (later ones reach s as they come). Each goes to a
// controller once (deliver).
func (cc *Controlled) greet(s *ControllerSession) {
	cc.mu.Lock()
	open, cfg, conv := cc.modelOpen, cc.modelCfg.Clone(), cc.modelConv
	cc.mu.Unlock()
	if !open {
		return
	}
	s.deliver(&realtime.SessionCreated{Header: realtime.Header{EventID: cc.eventID()}, Session: cfg})
	if conv != nil {
		c := *conv
		c.EventID = cc.eventID()
		s.deliver(&c)
	}
}
