package call

import (
	"context"
	"time"

	"switchboard/dtmf"
)

// dtmfRelayTimeout bounds one key relayed between bridged parties: a
// digit takes a few hundred milliseconds to send.
const dtmfRelayTimeout = 10 * time.Second

// partySink is what a party's leg reports to (LegSink): its keys go where
// the routes say, its end ends the call (the caller) or takes the party
// out of it.
type partySink struct{ p *Party }

// Key takes one key of the party: to the observer that asked for the
// party's keys (a transfer's accept and decline), else to the parties
// that hear it (a bridge passes DTMF between its legs, even while the
// conversation keeps listening to the caller: the key is meant for the
// human), else to the conversation when it hears the party.
func (s partySink) Key(ev dtmf.Event) {
	p := s.p
	c := p.c
	defer c.contain("dtmf in", true)
	if f := p.keys.Load(); f != nil {
		(*f)(ev)
		return
	}
	hearers := c.hearers(p)
	if len(hearers) == 0 {
		if c.heardByConversation(p) {
			c.conversationKey(ev)
		}
		return
	}
	for _, q := range hearers {
		digit := string(rune(ev.Digit))
		c.goSafe("dtmf relay", func() {
			ctx, cancel := context.WithTimeout(c.Context(), dtmfRelayTimeout)
			defer cancel()
			if err := q.leg.SendDTMF(ctx, digit); err != nil {
				c.log.Debug().Err(err).Str("party", q.leg.ID()).Msg("dtmf not relayed")
			}
		})
	}
}

// conversationKey notes a key the conversation hears (as its policy
// shows it), keeps its tone out of the recording under the redact policy,
// and hands it to the conversation: the one owner of the keypad.
func (c *Call) conversationKey(ev dtmf.Event) {
	h := c.conv.Load()
	if h == nil {
		return
	}
	digit := c.policy.LogDigits(string(rune(ev.Digit)))
	c.log.Info().Str("dtmf", digit).Str("source", ev.Source.String()).Msg("dtmf key")
	c.Note(Note{At: ev.At, Kind: NoteDTMF, Text: digit, Data: map[string]string{"source": ev.Source.String()}})
	c.redactKey(ev.At, ev.Duration)
	h.c.Key(ev)
}

// Ringing reports a placed call's callee being alerted.
func (s partySink) Ringing() {
	if s.p == s.p.c.caller {
		s.p.c.ringing()
	}
}

// PeerHold pauses the health checks of the caller's audio while the
// caller's side holds the call.
func (s partySink) PeerHold(on bool) {
	if s.p == s.p.c.caller {
		s.p.c.health.peerHold(on)
	}
}

// Lost hangs up a call whose caller's media stopped; another party whose
// media stopped leaves the call.
func (s partySink) Lost(reason string) {
	p := s.p
	c := p.c
	c.log.Warn().Str("party", p.leg.ID()).Str("reason", reason).Msg("media lost")
	if p == c.caller {
		c.goSafe("media lost", func() { c.hangup(reason) })
		return
	}
	c.goSafe("media lost", func() { c.partyGone(p, reason) })
}
