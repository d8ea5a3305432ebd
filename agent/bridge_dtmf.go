package agent

import (
	"context"
	"time"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/realtime"
)

var (
	_ call.DTMFHandler      = (*bridge)(nil)
	_ call.DTMFInbandSetter = (*bridge)(nil)
)

// DTMFPolicy is the agent's keypad policy (call.DTMFHandler).
func (b *bridge) DTMFPolicy() dtmf.Policy { return b.cfg.Settings.DTMF }

// DTMFInband is the agent's dtmf_inband (call.DTMFInbandSetter).
func (b *bridge) DTMFInband() call.Inband { return call.Inband(b.cfg.Settings.DTMFInband) }

// DTMFKey reports a key to the observer as
// input_audio_buffer.dtmf_event_received (call.DTMFHandler).
func (b *bridge) DTMFKey(ev dtmf.Event) {
	if o := b.observer.Load(); o != nil {
		n := ev.Notification()
		o.o.ServerEvent(&realtime.InputAudioBufferDTMFEventReceived{Event: n.Event, ReceivedAt: n.ReceivedAt})
	}
}

// DTMFText hands a flushed digit message to the Run goroutine
// (call.DTMFHandler); it never blocks the media path.
func (b *bridge) DTMFText(text string) {
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
