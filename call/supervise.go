package call

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// A supervisor joins a live call from the console (package rtc brings
// their browser as a leg): to listen, hearing the caller's line (the
// caller's voice mixed with what the caller hears) while nobody hears
// them, or to take the call over, replacing the conversation: the caller
// and the supervisor hear each other and the conversation ends.

// Supervision says who supervises a call and how.
type Supervision struct {
	// TakeOver replaces the conversation; otherwise the supervisor
	// listens.
	TakeOver bool
	// KeyID and KeyName name the API key that asked (the record says who
	// listened or took over).
	KeyID, KeyName string
}

// ErrTakingOver refuses a takeover while another supervisor's is under
// way (ReserveTakeOver).
var ErrTakingOver = errors.New("another supervisor is taking the call over")

// ReserveTakeOver holds the call's takeover for one supervisor while their
// browser connects, so that a second takeover asked meanwhile is refused
// at once (ErrTakingOver) rather than after its browser connected. It
// fails with ErrConversationEnded once the call was taken over, and with
// ErrNotActive before the answer or once the call is over. release (safe
// to call more than once) lets the next takeover through; call it once
// Supervise returned, or when the browser never connected.
func (c *Call) ReserveTakeOver() (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state != StateActive:
		return nil, ErrNotActive
	case c.convEnded != "":
		return nil, ErrConversationEnded
	case c.takingOver:
		return nil, ErrTakingOver
	}
	c.takingOver = true
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.takingOver = false
			c.mu.Unlock()
		})
	}, nil
}

// Supervision notes (NoteSupervisor's Text).
const (
	SuperviseListen   = "listen"
	SuperviseTakeOver = "takeover"
	SuperviseLeft     = "left"
)

// who names the supervisor for logs and reasons.
func (s Supervision) who() string {
	if s.KeyName != "" {
		return s.KeyName + " (" + s.KeyID + ")"
	}
	return s.KeyID
}

// Supervise joins leg, a supervisor's leg already answered, to the call
// and routes it. Listening, the supervisor hears the caller's line
// (FromMix) and nobody hears them. Taking over, the conversation stops
// hearing the caller, the caller and the supervisor hear each other, and
// the conversation ends (EndConversation): the call then lasts until the
// caller or the supervisor hangs up. The record notes who did what, and
// when. A call already taken over cannot be taken over again
// (ErrConversationEnded); a listener may join it.
func (c *Call) Supervise(leg Leg, s Supervision) (*Party, error) {
	what := SuperviseListen
	if s.TakeOver {
		what = SuperviseTakeOver
		reason := "taken over by supervisor " + s.who()
		if err := c.claimConversationEnd(reason); err != nil {
			return nil, err
		}
		p, err := c.join(leg, InbandOff, &s)
		if err != nil {
			c.mu.Lock()
			c.convEnded = "" // nothing changed: the conversation goes on
			c.mu.Unlock()
			return nil, err
		}
		err = c.takeOver(p)
		// The conversation ends whatever happened: the caller may hear the
		// supervisor already, and a call whose routes failed is ending.
		c.finishConversation(reason)
		if err != nil {
			_ = c.Leave(p, "supervision failed")
			return nil, err
		}
		c.noteSupervisor(p, what, "")
		return p, nil
	}
	p, err := c.join(leg, InbandOff, &s)
	if err != nil {
		return nil, err
	}
	if err := c.hear(p, FromMix(c.caller)); err != nil {
		_ = c.Leave(p, "supervision failed")
		return nil, err
	}
	c.noteSupervisor(p, what, "")
	return p, nil
}

// takeOver routes the caller and the supervisor p to each other and stops
// the conversation hearing the caller.
func (c *Call) takeOver(p *Party) error {
	if err := c.silenceConversation(); err != nil {
		return err
	}
	if err := c.hear(p, FromParty(c.caller)); err != nil {
		return fmt.Errorf("take over: %w", err)
	}
	if err := c.hear(c.caller, FromParty(p)); err != nil {
		return fmt.Errorf("take over: %w", err)
	}
	return nil
}

// silenceConversation makes the conversation hear nobody (its end is
// claimed, so ConversationHears would refuse anything but this).
func (c *Call) silenceConversation() error {
	r := &c.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrNotActive
	}
	if r.convListen != nil {
		r.convListen.Stop()
		r.convListen, r.convFrom = nil, nil
	}
	return nil
}

// noteSupervisor adds a supervisor's step to the record: who, which
// party, when; a takeover is written at once (it changes the call for
// good).
func (c *Call) noteSupervisor(p *Party, what, reason string) {
	d := map[string]any{"key_id": p.sup.KeyID, "party_id": p.leg.ID()}
	if p.sup.KeyName != "" {
		d["key_name"] = p.sup.KeyName
	}
	if reason != "" {
		d["reason"] = reason
	}
	c.Note(Note{At: time.Now(), Kind: NoteSupervisor, Text: what, Data: d})
	c.log.Info().Str("party", p.leg.ID()).Str("supervisor", p.sup.who()).Str("supervision", what).Msg("supervisor")
}

// noteLeft notes a party leaving the call: a supervisor (who), another
// party (a transfer's human) with its leg's media figures.
func (c *Call) noteLeft(p *Party, reason string) {
	if p.sup != nil {
		c.noteSupervisor(p, SuperviseLeft, reason)
		return
	}
	s := p.leg.Stats()
	c.Note(Note{At: time.Now(), Kind: NoteParty, Text: "left", Data: map[string]any{"party_id": p.leg.ID(), "reason": reason,
		"media": map[string]any{"packets_in": s.PacketsIn, "packets_out": s.PacketsOut, "lost": s.Lost, "late": s.Late,
			"jitter_ms": float64(s.Jitter) / float64(time.Millisecond)}}})
}
