package call

import (
	"context"
	"sync"
	"time"

	"switchboard/dtmf"
)

// routedTransferTimeout bounds a transfer chosen on the keypad (the route
// policy): the far end may ring for a while before it answers the REFER's
// subscription with a final NOTIFY.
const routedTransferTimeout = 90 * time.Second

// keypad is the call's digit buffer: every key from the leg goes through
// the conversation's policy and is flushed to it on #, after the idle
// time, or when the caller starts speaking.
type keypad struct {
	c    *Call
	conv Conversation

	mu        sync.Mutex
	policy    dtmf.Policy
	collector *dtmf.Collector
	timer     *time.Timer
	closed    bool
}

func newKeypad(c *Call, conv Conversation, policy dtmf.Policy, idle time.Duration) (*keypad, error) {
	col, err := dtmf.NewCollector(dtmf.CollectorOptions{Policy: policy, Buffer: dtmf.BufferOptions{IdleTimeout: idle}})
	if err != nil {
		return nil, err
	}
	return &keypad{c: c, conv: conv, policy: policy, collector: col}, nil
}

// add takes one press from any source.
func (k *keypad) add(ev dtmf.Event) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	res := k.collector.Add(ev)
	k.rearm()
	k.mu.Unlock()
	if !res.Accepted {
		return
	}
	digit := k.policy.LogDigits(string(rune(res.Key.Digit)))
	k.c.log.Info().Str("dtmf", digit).Str("source", res.Key.Source.String()).Msg("dtmf key")
	k.c.Note(Note{At: res.Key.At, Kind: NoteDTMF, Text: digit, Data: map[string]string{"source": res.Key.Source.String()}})
	k.conv.Key(res.Key)
	if res.HasFlush {
		k.flush(res.Flush)
	}
	if res.HasAction {
		k.act(res.Action)
	}
}

// speechStarted flushes what is buffered: the caller moved on to talking.
func (k *keypad) speechStarted() {
	k.mu.Lock()
	f, ok := k.collector.SpeechStarted(time.Now())
	k.rearm()
	k.mu.Unlock()
	if ok {
		k.flush(f)
	}
}

// rearm sets the timer to the next flush deadline; k.mu is held.
func (k *keypad) rearm() {
	at, ok := k.collector.Deadline()
	if !ok || k.closed {
		if k.timer != nil {
			k.timer.Stop()
		}
		return
	}
	d := time.Until(at)
	if k.timer == nil {
		k.timer = time.AfterFunc(d, k.tick)
	} else {
		k.timer.Reset(d)
	}
}

func (k *keypad) tick() {
	k.mu.Lock()
	f, ok := k.collector.Tick(time.Now())
	k.rearm()
	k.mu.Unlock()
	if ok {
		k.flush(f)
	}
}

func (k *keypad) flush(f dtmf.Flush) {
	text := k.policy.ModelText(f)
	if text == "" {
		return
	}
	if !k.policy.Redacted() {
		k.c.Note(Note{Kind: NoteTranscript, Role: "user", Text: text})
	}
	k.conv.Digits(text)
}

// act carries out a routed key without the model.
func (k *keypad) act(a dtmf.Action) {
	switch a.Kind {
	case dtmf.ActionHangup:
		k.c.log.Info().Msg("dtmf route: hang up")
		go k.c.hangup("caller chose to hang up (keypad)")
	case dtmf.ActionTransfer:
		k.c.log.Info().Str("target_uri", a.Target).Msg("dtmf route: transfer")
		k.c.Note(Note{Kind: NoteTransfer, Text: a.Target, Data: map[string]string{"reason": "dtmf route"}})
		go func() {
			ctx, cancel := context.WithTimeout(k.c.Context(), routedTransferTimeout)
			defer cancel()
			if err := k.c.leg.Transfer(ctx, a.Target, nil); err != nil {
				k.c.log.Warn().Err(err).Msg("dtmf route transfer failed")
				k.c.Note(Note{Kind: NoteTransfer, Text: "failed: " + err.Error()})
				return
			}
			k.c.hangup("transferred (keypad)")
		}()
	}
}

func (k *keypad) close() {
	k.mu.Lock()
	k.closed = true
	if k.timer != nil {
		k.timer.Stop()
	}
	k.mu.Unlock()
}
