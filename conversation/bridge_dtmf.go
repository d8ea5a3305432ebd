package conversation

import (
	"context"
	"time"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/realtime"
)

// Keypad is the agent's keypad policy and dtmf_inband.
func (b *bridge) Keypad() call.KeypadSettings {
	return call.KeypadSettings{Policy: b.cfg.Settings.DTMF, Inband: call.Inband(b.cfg.Settings.DTMFInband)}
}

// Recording is the agent's recording setting.
func (b *bridge) Recording() bool { return b.cfg.Settings.Recording.On() }

// Key reports a key to the observer as
// input_audio_buffer.dtmf_event_received.
func (b *bridge) Key(ev dtmf.Event) {
	if o := b.observer.Load(); o != nil {
		n := ev.Notification()
		o.o.ServerEvent(&realtime.InputAudioBufferDTMFEventReceived{Event: n.Event, ReceivedAt: n.ReceivedAt})
	}
}

// Digits hands a flushed digit message to the Run goroutine; it never
// blocks the media path.
func (b *bridge) Digits(text string) {
	select {
	case b.dtmfText <- text:
	default:
		b.log.Warn().Msg("dtmf message dropped: the conversation is behind")
	}
}

// digits sends a flushed digit message to the model as a user turn. A
// response in progress is interrupted first, as the caller moved on.
func (b *bridge) digits(ctx context.Context, s realtime.Session, text string) {
	if b.respActive {
		item, ms := b.phone.Flush()
		if item != "" && b.assistant[item] {
			b.send(ctx, s, &realtime.ConversationItemTruncate{ItemID: item, AudioEndMs: ms})
		}
		b.send(ctx, s, &realtime.ResponseCancel{})
		b.respActive = false
	}
	b.idleAt = time.Time{}
	it := realtime.UserText(text)
	b.send(ctx, s, &realtime.ConversationItemCreate{Item: it})
	b.remember(it)
	b.send(ctx, s, &realtime.ResponseCreate{})
}
