package call

import "time"

// A party's own hold: its phone put the call on hold (a re-INVITE with
// a=sendonly or inactive). The leg stops sending to it; whoever hears the
// party (a bridge) hears what OnPeerHold's observer routes to them, as a
// B2BUA plays its music on hold to the other side.

// OnPeerHold makes f hear when p's phone puts the call on hold (true) and
// takes it off hold (false); nil forgets f. f runs on the leg's
// goroutine, in order, and may change the call's routes.
func (p *Party) OnPeerHold(f func(holding bool)) {
	if f == nil {
		p.onHold.Store(nil)
		return
	}
	p.onHold.Store(&f)
}

// PeerHolding reports whether p's phone holds the call now.
func (p *Party) PeerHolding() bool { return p.holding.Load() }

// PeerHolding notes the party's hold and tells its observer.
func (s partySink) PeerHolding(on bool) {
	p := s.p
	defer p.c.contain("peer hold", true)
	p.holding.Store(on)
	p.c.notePeerHold(p, on)
	if f := p.onHold.Load(); f != nil {
		(*f)(on)
	}
}

// Roles of the party that held the call in a hold note's data (NoteHold).
const (
	HeldByCaller     = "caller"
	HeldByHuman      = "human"
	HeldBySupervisor = "supervisor"
)

// notePeerHold notes in the call record that p's phone held the call (on)
// or took it off hold, and who p is.
func (c *Call) notePeerHold(p *Party, on bool) {
	text, by := "resumed", HeldByHuman
	if on {
		text = "held"
	}
	switch {
	case p == c.caller:
		by = HeldByCaller
	case p.sup != nil:
		by = HeldBySupervisor
	}
	c.Note(Note{At: time.Now(), Kind: NoteHold, Text: text, Data: map[string]any{"party_id": p.leg.ID(), "by": by}})
}
