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
// checks the idle deadline; a routed transfer runs in a goroutine the
// conversation owns.
type keypad struct {
	controls call.Controls
	record   call.Record
	spawn    spawnFunc
	log      zerolog.Logger
	// toModel sends a flush to the model as the caller's turn.
	toModel func(ctx context.Context, text string)

	keys   chan dtmf.Event
	col    *dtmf.Collector
	policy dtmf.Policy
}

// keyQueue is how many keys wait for the loop: a caller cannot type
// faster than the loop takes them (it wakes every 20 ms at least), unless
// the loop is stuck; 16 keys are a few seconds of the fastest typing.
const keyQueue = 16

// routedTransferTimeout bounds a transfer chosen on the keypad (the route
// policy): the far end may ring for a while before it answers the REFER's
// subscription with a final NOTIFY.
const routedTransferTimeout = 90 * time.Second

func newKeypad(policy dtmf.Policy, idle time.Duration, ctl call.Controls, rec call.Record, spawn spawnFunc,
	toModel func(context.Context, string), log zerolog.Logger) *keypad {
	col, err := dtmf.NewCollector(dtmf.CollectorOptions{Policy: policy, Buffer: dtmf.BufferOptions{IdleTimeout: idle}})
	if err != nil {
		// Agents are validated when saved: this is a default agent.
		log.Warn().Err(err).Msg("dtmf policy refused: the model policy applies")
		policy = dtmf.Policy{}
		col, _ = dtmf.NewCollector(dtmf.CollectorOptions{Buffer: dtmf.BufferOptions{IdleTimeout: idle}})
	}
	return &keypad{controls: ctl, record: rec, spawn: spawn, toModel: toModel, log: log,
		keys: make(chan dtmf.Event, keyQueue), col: col, policy: policy}
}

// Key takes one key of the caller (call.Conversation): the controller
// sees it at once as input_audio_buffer.dtmf_event_received, and the
// loop gets it to buffer.
func (b *bridge) Key(ev dtmf.Event) {
	if o := b.observer.Load(); o != nil {
		n := ev.Notification()
		o.o.ServerEvent(&realtime.InputAudioBufferDTMFEventReceived{Event: n.Event, ReceivedAt: n.ReceivedAt})
	}
	if !b.keypad.offer(ev) {
		b.log.Warn().Msg("dtmf key dropped: the conversation is behind")
	}
}

// offer queues a key for the loop without blocking; false when the
// queue is full.
func (k *keypad) offer(ev dtmf.Event) bool {
	select {
	case k.keys <- ev:
		return true
	default:
		return false
	}
}

// key buffers one key (Run goroutine): a flush goes to the model, a
// routed key acts.
func (k *keypad) key(ctx context.Context, ev dtmf.Event) error {
	res := k.col.Add(ev)
	if !res.Accepted {
		return nil
	}
	if res.HasFlush {
		k.flush(ctx, res.Flush)
	}
	if res.HasAction {
		return k.act(ctx, res.Action)
	}
	return nil
}

// speechStarted flushes the buffered keys: the caller moved on to
// talking.
func (k *keypad) speechStarted(ctx context.Context, now time.Time) {
	if f, ok := k.col.SpeechStarted(now); ok {
		k.flush(ctx, f)
	}
}

// tick flushes the buffered keys once the caller stopped typing for the
// idle time.
func (k *keypad) tick(ctx context.Context, now time.Time) {
	if f, ok := k.col.Tick(now); ok {
		k.flush(ctx, f)
	}
}

// flush sends a flush to the model as the caller's text, as the policy
// renders it (redacted under redact), and notes it unless redacted.
func (k *keypad) flush(ctx context.Context, f dtmf.Flush) {
	text := k.policy.ModelText(f)
	if text == "" {
		return
	}
	if !k.policy.Redacted() {
		k.record.Note(call.Note{Kind: call.NoteTranscript, Role: "user", Text: text})
	}
	k.toModel(ctx, text)
}

// act carries out a key the route policy maps to an action: hang up now,
// or transfer (REFER) and hang up once it is accepted.
func (k *keypad) act(ctx context.Context, a dtmf.Action) error {
	switch a.Kind {
	case dtmf.ActionHangup:
		k.log.Info().Msg("dtmf route: hang up")
		return call.Hangup("caller chose to hang up (keypad)")
	case dtmf.ActionTransfer:
		k.log.Info().Str("target_uri", a.Target).Msg("dtmf route: transfer")
		k.record.Note(call.Note{Kind: call.NoteTransfer, Text: a.Target, Data: map[string]string{"reason": "dtmf route"}})
		k.spawn("keypad transfer", func() {
			tctx, cancel := context.WithTimeout(ctx, routedTransferTimeout)
			defer cancel()
			if err := k.controls.Transfer(tctx, a.Target, nil); err != nil {
				k.log.Warn().Err(err).Msg("dtmf route transfer failed")
				k.record.Note(call.Note{Kind: call.NoteTransfer, Text: "failed: " + err.Error()})
				return
			}
			k.controls.Hangup("transferred (keypad)")
		})
	}
	return nil
}
