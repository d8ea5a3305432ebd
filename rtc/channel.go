package rtc

import (
	"context"

	"github.com/pion/webrtc/v4"

	"switchboard/realtime"
)

// EventsLabel is the data channel that carries the realtime events, as
// the hosted realtime APIs name it.
const EventsLabel = "oai-events"

// inboxSize bounds the browser's client events waiting for the session:
// a client sends a handful per turn; one that floods is told, and its
// excess dropped, rather than stall the data channel's reader.
const inboxSize = 256

// onDataChannel takes the browser's "oai-events" channel; any other
// channel is closed.
func (l *Leg) onDataChannel(dc *webrtc.DataChannel) {
	if dc.Label() != EventsLabel {
		l.log.Debug().Str("label", dc.Label()).Msg("data channel refused")
		_ = dc.Close()
		return
	}
	l.mu.Lock()
	if l.dc != nil || l.closed {
		l.mu.Unlock()
		_ = dc.Close()
		return
	}
	l.dc = dc
	l.mu.Unlock()
	inbox := make(chan []byte, inboxSize)
	dc.OnOpen(func() { l.dcOpenOnce.Do(func() { close(l.dcOpen) }) })
	dc.OnMessage(func(m webrtc.DataChannelMessage) {
		if !m.IsString {
			return
		}
		select {
		case inbox <- m.Data:
		default:
			l.reply(&realtime.ErrorEvent{Error: realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: "rate_limited",
				Message: "too many client events waiting: this one was dropped"}})
		}
	})
	dc.OnClose(func() {
		l.mu.Lock()
		events := l.events
		l.mu.Unlock()
		if events != nil {
			_ = events.Close()
		}
	})
	l.wg.Add(1)
	go l.readEvents(inbox)
}

// readEvents hands the browser's client events to the call's session, in
// order, until the leg ends.
func (l *Leg) readEvents(inbox <-chan []byte) {
	defer l.wg.Done()
	for {
		var msg []byte
		select {
		case <-l.ctx.Done():
			return
		case msg = <-inbox:
		}
		l.mu.Lock()
		events := l.events
		l.mu.Unlock()
		if events == nil {
			l.reply(&realtime.ErrorEvent{Error: realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: "no_session",
				Message: "this call's session is not steered from here (a webhook-routed number's controller steers it)"}})
			continue
		}
		ev, err := realtime.Decode(msg)
		if err != nil {
			l.reply(realtime.DecodeErrorEvent(err))
			continue
		}
		if g := l.callOpts.Guard; g != nil {
			if d := g(ev); d != nil {
				l.reply(&realtime.ErrorEvent{Error: *d})
				continue
			}
		}
		if a, ok := ev.(*realtime.InputAudioBufferAppend); ok {
			err = events.AppendAudio(a.Audio)
		} else {
			err = events.Send(l.ctx, ev)
		}
		if err != nil && l.ctx.Err() == nil {
			l.log.Debug().Err(err).Str("event", ev.EventType()).Msg("client event not delivered")
			if context.Cause(l.ctx) == nil {
				l.reply(&realtime.ErrorEvent{Error: realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: "not_delivered", Message: err.Error()}})
			}
		}
	}
}

// pumpEvents sends the session's server events to the browser once its
// data channel is open (they wait in the session's queue until then).
func (l *Leg) pumpEvents(events realtime.Session) {
	defer l.wg.Done()
	select {
	case <-l.dcOpen:
	case <-l.ctx.Done():
		return
	}
	ch := events.Events()
	for {
		select {
		case <-l.ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if o := l.callOpts.Observe; o != nil {
				o(ev)
			}
			if _, audio := ev.(*realtime.ResponseOutputAudioDelta); audio {
				continue // the audio goes over the media track
			}
			l.reply(ev)
		}
	}
}

// reply sends one server event on the data channel.
func (l *Leg) reply(ev realtime.Event) {
	l.mu.Lock()
	dc := l.dc
	l.mu.Unlock()
	if dc == nil || dc.ReadyState() != webrtc.DataChannelStateOpen {
		return
	}
	b, err := realtime.Encode(ev)
	if err != nil {
		l.log.Warn().Err(err).Str("event", ev.EventType()).Msg("encode server event")
		return
	}
	if err := dc.SendText(string(b)); err != nil {
		l.log.Debug().Err(err).Msg("data channel send")
	}
}
