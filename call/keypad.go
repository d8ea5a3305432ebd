package call

import (
	"context"
	"time"

	"switchboard/dtmf"
)

// routedTransferTimeout bounds a transfer chosen on the keypad (the route
// policy): the far end may ring for a while before it answers the REFER's
// subscription with a final NOTIFY.
const routedTransferTimeout = 90 * time.Second

// keypadSink is what the call's dtmf.Keypad reports to: every accepted
// key goes into the record and to the conversation, a flush to the
// conversation as the caller's text, a routed key is carried out here.
type keypadSink struct {
	c      *Call
	conv   Conversation
	policy dtmf.Policy
}

func (s keypadSink) Key(ev dtmf.Event) {
	digit := s.policy.LogDigits(string(rune(ev.Digit)))
	s.c.log.Info().Str("dtmf", digit).Str("source", ev.Source.String()).Msg("dtmf key")
	s.c.Note(Note{At: ev.At, Kind: NoteDTMF, Text: digit, Data: map[string]string{"source": ev.Source.String()}})
	s.c.redactKey(ev.At, ev.Duration)
	s.conv.Key(ev)
}

func (s keypadSink) Text(text string, _ dtmf.Flush) {
	defer s.c.contain("dtmf digits", true)
	if !s.policy.Redacted() {
		s.c.Note(Note{Kind: NoteTranscript, Role: "user", Text: text})
	}
	s.conv.Digits(text)
}

func (s keypadSink) Action(a dtmf.Action) {
	defer s.c.contain("dtmf action", true)
	c := s.c
	switch a.Kind {
	case dtmf.ActionHangup:
		c.log.Info().Msg("dtmf route: hang up")
		c.goSafe("keypad hangup", func() { c.hangup("caller chose to hang up (keypad)") })
	case dtmf.ActionTransfer:
		c.log.Info().Str("target_uri", a.Target).Msg("dtmf route: transfer")
		c.Note(Note{Kind: NoteTransfer, Text: a.Target, Data: map[string]string{"reason": "dtmf route"}})
		c.goSafe("keypad transfer", func() {
			ctx, cancel := context.WithTimeout(c.Context(), routedTransferTimeout)
			defer cancel()
			if err := c.leg.Transfer(ctx, a.Target, nil); err != nil {
				c.log.Warn().Err(err).Msg("dtmf route transfer failed")
				c.Note(Note{Kind: NoteTransfer, Text: "failed: " + err.Error()})
				return
			}
			c.hangup("transferred (keypad)")
		})
	}
}
