package call

import (
	"context"
	"fmt"
)

// The conversation may end before the call does: a supervisor took the
// call over, or the caller was handed to a human for good. The call then
// goes on without it, its parties routed to each other, until one side
// hangs up.

// EndConversation ends the call's conversation while the call goes on:
// the conversation stops hearing anyone, whoever still heard it hears
// nothing (route them first: Hear), and its Run sees its context end with
// a cause wrapping ErrConversationEnded, so it releases its model session
// and returns. The call then lasts until the caller hangs up, or until
// the party the caller hears leaves (Leave, or its leg's end). reason
// goes to the log and the call record. It fails with ErrNotActive before
// the answer or once the call is over, and with ErrConversationEnded the
// second time.
func (c *Call) EndConversation(reason string) error {
	if err := c.claimConversationEnd(reason); err != nil {
		return err
	}
	c.finishConversation(reason)
	return nil
}

// claimConversationEnd marks the conversation as ending (once).
func (c *Call) claimConversationEnd(reason string) error {
	if c.conv.Load() == nil {
		return ErrNotActive
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state != StateActive:
		return ErrNotActive
	case c.convEnded != "":
		return ErrConversationEnded
	}
	c.convEnded = reason
	return nil
}

// finishConversation takes the claimed conversation out of the routes and
// ends its Run.
func (c *Call) finishConversation(reason string) {
	r := &c.routes
	r.mu.Lock()
	if r.convListen != nil && !r.stopped {
		r.convListen.Stop()
		r.convListen, r.convFrom = nil, nil
	}
	for _, p := range r.parties {
		if p.hears.kind == sourceConversation && !r.stopped {
			p.voice.Reset()
			p.voicePCM.Reset()
			p.audio.Playout().Flush()
			p.hears = Nothing()
		}
	}
	r.publish()
	r.mu.Unlock()
	c.mu.Lock()
	stop := c.stopConv
	c.mu.Unlock()
	if stop != nil {
		stop(fmt.Errorf("%w: %s", ErrConversationEnded, reason))
	}
	c.log.Info().Str("reason", reason).Msg("conversation ended: the call goes on without it")
}

// ConversationEnded says why the conversation ended while the call goes
// on ("" while it runs, or when the call ended with it).
func (c *Call) ConversationEnded() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.convEnded
}

// runConversation runs the conversation under a context EndConversation
// can end before the call's.
func (c *Call) runConversation(ctx context.Context, conv Conversation) error {
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	c.mu.Lock()
	c.stopConv = stop
	ended := c.convEnded
	c.mu.Unlock()
	if ended != "" { // it ended between the answer and now
		stop(fmt.Errorf("%w: %s", ErrConversationEnded, ended))
	}
	return conv.Run(runCtx)
}
