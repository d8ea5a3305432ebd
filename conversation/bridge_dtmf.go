package conversation

import (
	"context"
	"time"

	"github.com/rs/zerolog"

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

// keypad is the caller's keys as the conversation's loop owns them: the
// call hands each key over once (Key, never blocking the media path), and
// the loop buffers them (a dtmf.Collector), flushes them to the model on
// #, after the idle time or when the caller starts speaking, and carries
// out the route policy. No timer or goroutine of its own: the loop's tick
// checks the idle deadline.
type keypad struct {
	keys   chan dtmf.Event
	col    *dtmf.Collector
	policy dtmf.Policy
}

// keyQueue is how many keys wait for the loop: a caller cannot type
// faster than the loop takes them, unless the loop is stuck.
const keyQueue = 32

// routedTransferTimeout bounds a transfer chosen on the keypad (the route
// policy): the far end may ring for a while before it answers the REFER's
// subscription with a final NOTIFY.
const routedTransferTimeout = 90 * time.Second

func newKeypad(policy dtmf.Policy, idle time.Duration, log zerolog.Logger) *keypad {
	col, err := dtmf.NewCollector(dtmf.CollectorOptions{Policy: policy, Buffer: dtmf.BufferOptions{IdleTimeout: idle}})
	if err != nil {
		// Agents are validated when saved: this is a default agent.
		log.Warn().Err(err).Msg("dtmf policy refused: the model policy applies")
		policy = dtmf.Policy{}
		col, _ = dtmf.NewCollector(dtmf.CollectorOptions{Buffer: dtmf.BufferOptions{IdleTimeout: idle}})
	}
	return &keypad{keys: make(chan dtmf.Event, keyQueue), col: col, policy: policy}
}

// Key takes one key of the caller (call.Conversation): the controller
// sees it at once as input_audio_buffer.dtmf_event_received, and the
// loop gets it to buffer.
func (b *bridge) Key(ev dtmf.Event) {
	if o := b.observer.Load(); o != nil {
		n := ev.Notification()
		o.o.ServerEvent(&realtime.InputAudioBufferDTMFEventReceived{Event: n.Event, ReceivedAt: n.ReceivedAt})
	}
	select {
	case b.keypad.keys <- ev:
	default:
		b.log.Warn().Msg("dtmf key dropped: the conversation is behind")
	}
}

// key buffers one key (Run goroutine): a flush goes to the model, a
// routed key acts.
func (b *bridge) key(ctx context.Context, s realtime.Session, ev dtmf.Event) error {
	res := b.keypad.col.Add(ev)
	if !res.Accepted {
		return nil
	}
	if res.HasFlush {
		b.flushKeys(ctx, s, res.Flush)
	}
	if res.HasAction {
		return b.keyAction(ctx, res.Action)
	}
	return nil
}

// keysSpeechStarted flushes the buffered keys: the caller moved on to
// talking.
func (b *bridge) keysSpeechStarted(ctx context.Context, s realtime.Session) {
	if f, ok := b.keypad.col.SpeechStarted(time.Now()); ok {
		b.flushKeys(ctx, s, f)
	}
}

// keysTick flushes the buffered keys once the caller stopped typing for
// the idle time.
func (b *bridge) keysTick(ctx context.Context, s realtime.Session, now time.Time) {
	if f, ok := b.keypad.col.Tick(now); ok {
		b.flushKeys(ctx, s, f)
	}
}

// flushKeys sends a flush to the model as the caller's text, as the
// policy renders it (redacted under redact), and notes it unless
// redacted.
func (b *bridge) flushKeys(ctx context.Context, s realtime.Session, f dtmf.Flush) {
	text := b.keypad.policy.ModelText(f)
	if text == "" {
		return
	}
	if !b.keypad.policy.Redacted() {
		b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "user", Text: text})
	}
	b.digits(ctx, s, text)
}

// keyAction carries out a key the route policy maps to an action: hang
// up now, or transfer (REFER) and hang up once it is accepted.
func (b *bridge) keyAction(ctx context.Context, a dtmf.Action) error {
	switch a.Kind {
	case dtmf.ActionHangup:
		b.log.Info().Msg("dtmf route: hang up")
		return call.Hangup("caller chose to hang up (keypad)")
	case dtmf.ActionTransfer:
		b.log.Info().Str("target_uri", a.Target).Msg("dtmf route: transfer")
		b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: a.Target, Data: map[string]string{"reason": "dtmf route"}})
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer contain(b.log, b.phone, "keypad transfer")
			tctx, cancel := context.WithTimeout(ctx, routedTransferTimeout)
			defer cancel()
			err := b.phone.Transfer(tctx, a.Target, nil)
			if err != nil {
				b.log.Warn().Err(err).Msg("dtmf route transfer failed")
				b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: "failed: " + err.Error()})
				return
			}
			b.phone.Hangup("transferred (keypad)")
		}()
	}
	return nil
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
