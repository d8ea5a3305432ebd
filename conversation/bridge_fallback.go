package conversation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchboard/call"
	"switchboard/realtime"
)

// maxApologyPlay bounds how long the fallback waits for its apology to be
// heard before it hangs up: a rendered sentence lasts a few seconds, so a
// queue still playing after 30 s is stuck.
const maxApologyPlay = 30 * time.Second

// reconnect opens a new session once after the old one failed, and seeds
// it with the conversation so far.
func (b *bridge) reconnect(ctx context.Context, old realtime.Session) (realtime.Session, error) {
	cause := old.Err()
	if !b.reconnected.IsZero() && time.Since(b.reconnected) < ReconnectWindow {
		old.Close()
		b.sess.Store(nil)
		return nil, fmt.Errorf("session lost again within %s of the last reconnect: %w", ReconnectWindow, cause)
	}
	b.reconnected = time.Now()
	b.log.Warn().Err(cause).Msg("realtime session lost mid-call: reconnecting once")
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "session lost: " + errText(cause)})
	old.Close()
	b.phone.Flush()
	b.turns.lost()
	rctx, cancel := context.WithTimeout(ctx, b.rt.opts.ReconnectTimeout)
	defer cancel()
	s, err := b.open(rctx)
	if err != nil {
		b.sess.Store(nil)
		return nil, fmt.Errorf("reconnect: %w (after %v)", err, cause)
	}
	for _, it := range b.hist.items {
		b.sendTo(ctx, s, &realtime.ConversationItemCreate{Item: it})
	}
	b.sess.Store(&sessionBox{s})
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: fmt.Sprintf("session reconnected, %d items re-seeded", len(b.hist.items))})
	return s, nil
}

func errText(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

// apologize is the fallback once the model is unreachable: say the apology
// (or play a short tone without a Greeter), then transfer to the
// fallback URI or hang up. The caller never sits in silence.
func (b *bridge) apologize(ctx context.Context, cause error) error {
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "fallback: " + errText(cause)})
	text := b.cfg.Settings.ApologyText()
	pcm, err := []byte(nil), errors.New("no greeter")
	if g := b.rt.opts.Greeter; g != nil {
		pcm, err = g.Render(ctx, text, b.cfg.Settings.Voice, b.format.Rate)
	}
	if err != nil {
		pcm = tone(b.format.Rate, 440, 0.6, 0.1)
	}
	b.phone.PlayPCM(apologyItem, pcm)
	b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: text})
	deadline := time.Now().Add(maxApologyPlay)
	for b.phone.Pending() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(tick):
		}
	}
	if uri := b.cfg.Settings.FallbackURI; uri != "" {
		b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: uri, Data: map[string]string{"reason": "fallback"}})
		if err := b.phone.Transfer(ctx, uri, nil); err != nil {
			b.log.Warn().Err(err).Str("target_uri", uri).Msg("fallback transfer failed")
			return call.Hangup("assistant unavailable; transfer failed")
		}
		return call.Hangup("assistant unavailable; transferred")
	}
	return call.Hangup("assistant unavailable")
}
