package call

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/dtmf"
	"switchboard/media"
)

// Party is one leg of a call with the routes of its audio: what it hears
// (Call.Hear) and, through that, whom its voice reaches. The caller is the
// first party (Call.Caller); others join a live call (Call.Join): a human
// the caller is handed to, a supervisor's browser.
type Party struct {
	c     *Call
	leg   Leg
	audio Audio

	// The fields below are the call's routes (Call.routes.mu).
	hears Source
	// feed listens to the party heard and writes to relay: the other
	// party's voice in this party's own format, so two G.711 legs of one
	// law relay code words and any other pair converts once.
	feed  *media.Listener
	relay *media.Writer
	// voice and voicePCM write the conversation's audio (its format, and
	// PCM16 at its rate for prompts rendered locally).
	voice, voicePCM *media.Writer
	// mixer mixes the line this party listens to (FromMix) into mixw.
	mixer *media.Mixer
	mixw  *media.Writer

	// sup, set for a supervisor's party, says who they are (supervise.go).
	sup *Supervision

	// keys, when set, takes the party's keys before any route does (a
	// warm transfer's accept and decline).
	keys atomic.Pointer[func(dtmf.Event)]
	// dropped is why the call took the party out on its own (Dropped).
	dropped atomic.Pointer[string]
	// holding says the party's phone holds the call; onHold, when set,
	// is told when it does and when it stops (hold.go).
	holding atomic.Bool
	onHold  atomic.Pointer[func(bool)]
}

// Dropped is why the call took p out on its own: its media stopped
// ("media timeout: …"), its leg ended; "" while it is in the call or when
// it was asked to leave.
func (p *Party) Dropped() string {
	if r := p.dropped.Load(); r != nil {
		return *r
	}
	return ""
}

// Leg is the party's leg.
func (p *Party) Leg() Leg { return p.leg }

// OnKey makes f take the party's keys instead of their route (the
// conversation, or the party that hears this one); nil gives them back.
// f runs on the leg's goroutines and must not block.
func (p *Party) OnKey(f func(dtmf.Event)) {
	if f == nil {
		p.keys.Store(nil)
		return
	}
	p.keys.Store(&f)
}

// Source is what a party hears: the conversation, another party, a
// party's whole line (a supervisor listening), a loop of audio (hold
// music), or nothing.
type Source struct {
	kind  sourceKind
	party *Party
	loop  *media.Loop
}

type sourceKind int

const (
	sourceNothing sourceKind = iota
	sourceConversation
	sourceParty
	sourceLoop
	sourceMix
)

// FromConversation is the conversation's voice (the model, its prompts).
func FromConversation() Source { return Source{kind: sourceConversation} }

// FromParty is another party's voice (a bridge).
func FromParty(p *Party) Source { return Source{kind: sourceParty, party: p} }

// FromMix is p's line: p's voice mixed with what p hears (the
// conversation, a bridged party, hold audio), as a supervisor listens to
// it. Only the caller's line can be heard so (its taps make the mix). A
// party hearing a line is not one of its hearers: p's keys are not
// relayed to it, and the mix is heard by nobody else.
func FromMix(p *Party) Source { return Source{kind: sourceMix, party: p} }

// FromLoop is l played over and over (hold music).
func FromLoop(l *media.Loop) Source { return Source{kind: sourceLoop, loop: l} }

// Nothing is silence.
func Nothing() Source { return Source{} }

// String names the source for logs.
func (s Source) String() string {
	switch s.kind {
	case sourceConversation:
		return "conversation"
	case sourceParty:
		return "party " + s.party.leg.ID()
	case sourceLoop:
		return "loop"
	case sourceMix:
		return "the line of party " + s.party.leg.ID()
	}
	return "nothing"
}

// hearConversation is the first route of every call's caller.
func hearConversation() Source { return FromConversation() }

// relayLive bounds what a relay queues: the other party's frames come on
// its own clock, and a bridge never builds up a delay.
const relayLive = 120 * time.Millisecond

// ErrNotInCall means a party is not (or no longer) in the call.
var ErrNotInCall = errors.New("party is not in the call")

// routes are a call's audio routes. mu serializes every change; the
// conversation's voice, read on every write, is published copy-on-write.
type routes struct {
	mu      sync.Mutex
	parties []*Party
	// convFrom is the party the conversation hears (nil: nobody), through
	// convListen.
	convFrom   *Party
	convListen *media.Listener
	stopped    bool
	// routed counts the routes made: each relay's or mix's audio is a new
	// item of the playout, since a flush drops an item's later writes
	// for good (the same party heard again after hold audio).
	routed int

	voice atomic.Pointer[voiceSet]
	// mixers feed the parties that listen to the caller's line; the
	// caller's tap reads them on every frame.
	mixers atomic.Pointer[mixSet]
}

// voiceSet is who hears the conversation: their writers, in order (the
// caller first).
type voiceSet struct {
	parties []*Party
}

// String lists the routes for the call's log: each party's chain.
func (r *routes) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, p := range r.parties {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s hears %s", p.leg.ID(), p.hears)
		if p.voice != nil && p.hears.kind == sourceConversation {
			b.WriteString(" (" + p.voice.String() + ")")
		}
	}
	if r.convListen != nil {
		b.WriteString("; conversation hears " + r.convListen.String())
	}
	return b.String()
}

// stop ends every route (the call is over): no listener feeds anything
// from now on.
func (r *routes) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.convListen != nil {
		r.convListen.Stop()
		r.convListen, r.convFrom = nil, nil
	}
	for _, p := range r.parties {
		r.unhear(p)
	}
	r.voice.Store(&voiceSet{})
	r.mixers.Store(nil)
}

// unhear stops what feeds p from another party (r.mu held): a relay's
// listener, a mix's mixer.
func (r *routes) unhear(p *Party) {
	if p.feed != nil {
		p.feed.Stop()
		p.feed = nil
	}
	if p.mixer != nil {
		old := r.mixers.Load()
		set := &mixSet{}
		if old != nil {
			for _, m := range old.ms {
				if m != p.mixer {
					set.ms = append(set.ms, m)
				}
			}
		}
		r.mixers.Store(set)
		p.mixer = nil
	}
}

// addMixer makes the caller's tap feed m (r.mu held).
func (r *routes) addMixer(m *media.Mixer) {
	set := &mixSet{}
	if old := r.mixers.Load(); old != nil {
		set.ms = append(set.ms, old.ms...)
	}
	set.ms = append(set.ms, m)
	r.mixers.Store(set)
}

// Caller is the call's first party: the caller, or the callee of a call
// the appliance placed.
func (c *Call) Caller() *Party { return c.caller }

// Hear makes p hear s from the next frame on: what p was hearing stops
// (audio queued for it is dropped, within a frame), and s starts. It is
// safe while media flows.
func (c *Call) Hear(p *Party, s Source) error { return c.hear(p, s) }

func (c *Call) hear(p *Party, s Source) error {
	r := &c.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrNotActive
	}
	if !r.has(p) || (s.party != nil && !r.has(s.party)) {
		return ErrNotInCall
	}
	switch {
	case s.party == p:
		return errors.New("hear: a party cannot hear itself")
	case s.kind == sourceMix && s.party != c.caller:
		return errors.New("hear: only the caller's line can be listened to")
	case s.kind == sourceConversation && c.ConversationEnded() != "":
		return ErrConversationEnded
	}
	if err := c.wire(p, s); err != nil {
		return err
	}
	old := p.hears
	r.unhear(p)
	q := p.audio.Playout()
	if p.voice != nil && old.kind == sourceConversation && s.kind != sourceConversation {
		p.voice.Reset()
		p.voicePCM.Reset()
	}
	if old != s && s.kind != sourceParty && s.kind != sourceMix {
		// What was queued for the old source goes, and the new one
		// starts at the next frame. A party's voice takes over by
		// itself once its first frames are there (Writer.Restart).
		q.Flush()
	}
	q.SetFiller(nil)
	r.routed++
	switch s.kind {
	case sourceParty:
		from := s.party
		relay, item := p.relay, fmt.Sprintf("relay:%s#%d", from.leg.ID(), r.routed)
		relay.Restart()
		var err error
		p.feed, err = from.audio.Listen(relay.Format(), func(b []byte) { relay.Write(item, b) })
		if err != nil {
			return fmt.Errorf("hear: %w", err)
		}
	case sourceMix:
		w, item := p.mixw, fmt.Sprintf("mix:%s#%d", s.party.leg.ID(), r.routed)
		w.Restart()
		var buf []byte
		p.mixer = media.NewMixer(func(pcm []int16) {
			buf = media.AppendPCM16LE(buf[:0], pcm)
			w.Write(item, buf)
		})
		r.addMixer(p.mixer)
	case sourceLoop:
		q.SetFiller(s.loop)
	}
	p.hears = s
	r.publish()
	ev := c.log.Debug().Str("party", p.leg.ID()).Stringer("hears", s)
	if p.feed != nil {
		ev = ev.Str("chain", p.feed.String()+" | "+p.relay.String())
	}
	ev.Msg("route")
	return nil
}

// wire makes the writers p needs to hear s (r.mu held).
func (c *Call) wire(p *Party, s Source) error {
	var err error
	switch {
	case s.kind == sourceConversation && p.voice == nil:
		if p.voice, err = p.audio.Writer(c.format, media.WriterOptions{}); err != nil {
			return fmt.Errorf("hear: %w", err)
		}
		if p.voicePCM, err = p.audio.Writer(media.PCM16(c.format.Rate), media.WriterOptions{}); err != nil {
			return fmt.Errorf("hear: %w", err)
		}
	case s.kind == sourceParty && (p.relay == nil || p.relay.Format() != p.audio.Format()):
		// A placed leg's format is its answer's (PCM until then, the
		// settled law's code words for G.711): the relay takes it.
		if p.relay, err = p.audio.Writer(p.audio.Format(), media.WriterOptions{Live: relayLive}); err != nil {
			return fmt.Errorf("hear: %w", err)
		}
	case s.kind == sourceMix && p.mixw == nil:
		if p.mixw, err = p.audio.Writer(media.PCM16(media.ClockRate), media.WriterOptions{Live: relayLive}); err != nil {
			return fmt.Errorf("hear: %w", err)
		}
	}
	return nil
}

// has reports whether p is a party of the call (r.mu held).
func (r *routes) has(p *Party) bool {
	for _, q := range r.parties {
		if q == p {
			return true
		}
	}
	return false
}

// publish makes the conversation's voice reach the parties that hear it
// (r.mu held).
func (r *routes) publish() {
	vs := &voiceSet{}
	if r.stopped {
		r.voice.Store(vs)
		return
	}
	for _, p := range r.parties {
		if p.hears.kind == sourceConversation {
			vs.parties = append(vs.parties, p)
		}
	}
	r.voice.Store(vs)
}

// ConversationHears makes the conversation hear p's voice (nil: nobody,
// as while the caller is on hold) from the next frame on.
func (c *Call) ConversationHears(p *Party) error { return c.conversationHears(p) }

func (c *Call) conversationHears(p *Party) error {
	h := c.conv.Load()
	if h == nil {
		return ErrNotActive
	}
	r := &c.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrNotActive
	}
	if p != nil && !r.has(p) {
		return ErrNotInCall
	}
	if p != nil && c.ConversationEnded() != "" {
		return ErrConversationEnded
	}
	if r.convFrom == p {
		return nil
	}
	if r.convListen != nil {
		r.convListen.Stop()
		r.convListen, r.convFrom = nil, nil
	}
	if p == nil {
		return nil
	}
	conv := h.c
	l, err := p.audio.Listen(c.format, func(b []byte) {
		defer c.contain("audio in", true)
		conv.Audio(b)
	})
	if err != nil {
		return fmt.Errorf("conversation hears: %w", err)
	}
	r.convListen, r.convFrom = l, p
	return nil
}

// addParty puts a started party in the call's routes, hearing nothing.
func (r *routes) addParty(p *Party) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return ErrNotActive
	}
	r.parties = append(r.parties, p)
	return nil
}

// Join adds leg to the live call as a party that hears nothing and is
// heard by nobody until the call routes it: a leg already answered (a
// callee the appliance placed and that answered, a browser that
// connected), or one the appliance places to join the call, whose Answer
// dials once it joined (its media is ready to go out with the answer; a
// dial that fails is followed by Leave). Its keys go nowhere until OnKey
// or a route takes them. Its leg's end (the party hung up, its connection
// or its media was lost) takes it out of the call; if the caller was
// hearing it and the conversation has ended, the caller has nobody left
// and the call ends too.
func (c *Call) Join(leg Leg, inband Inband) (*Party, error) {
	return c.join(leg, inband, nil)
}

func (c *Call) join(leg Leg, inband Inband, sup *Supervision) (*Party, error) {
	if c.getState() != StateActive {
		return nil, ErrNotActive
	}
	p := &Party{c: c, leg: leg, sup: sup}
	if err := leg.Start(partySink{p}, LegOptions{Rate: c.format.Rate, Inband: inband}); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	p.audio = leg.Audio()
	r := &c.routes
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		_ = leg.Close()
		return nil, ErrNotActive
	}
	r.parties = append(r.parties, p)
	// Added under the routes' lock: teardown stops the routes before it
	// waits for the helpers.
	c.helpers.Add(1)
	r.mu.Unlock()
	go c.watchParty(p)
	c.log.Info().Str("party", leg.ID()).Str("channel", leg.Info().Kind).Msg("party joined")
	return p, nil
}

// watchParty takes p out of the call once its leg ends.
func (c *Call) watchParty(p *Party) {
	defer c.helpers.Done()
	defer c.contain("party", false)
	<-p.leg.Context().Done()
	c.partyGone(p, causeText(context.Cause(p.leg.Context())))
}

// partyGone takes out p, whose leg ended on its own (it hung up, its
// connection failed, its media stopped). A caller who heard p, once the
// conversation has ended, has nobody left: the call ends.
func (c *Call) partyGone(p *Party, reason string) {
	p.dropped.CompareAndSwap(nil, &reason) // the first why: hanging up a lost leg ends it too
	r := &c.routes
	r.mu.Lock()
	if !r.has(p) {
		r.mu.Unlock()
		return
	}
	alone := c.caller.hears.kind == sourceParty && c.caller.hears.party == p
	c.unroute(p)
	r.mu.Unlock()
	c.release(p, reason)
	if alone && c.ConversationEnded() != "" {
		c.hangup(p.title() + " hung up")
	}
}

// title names the party in a reason: its role, or "the other party".
func (p *Party) title() string {
	if p.sup != nil {
		return "the supervisor"
	}
	return "the other party"
}

// Leave takes p out of the call: whoever heard it hears nothing, the
// conversation stops hearing it, and its leg is hung up with reason and
// closed. The caller cannot leave: the call ends instead (Hangup).
func (c *Call) Leave(p *Party, reason string) error {
	if p == c.caller {
		return errors.New("leave: the caller ends the call instead")
	}
	r := &c.routes
	r.mu.Lock()
	if !r.has(p) {
		r.mu.Unlock()
		return ErrNotInCall
	}
	c.unroute(p)
	r.mu.Unlock()
	c.release(p, reason)
	return nil
}

// unroute takes p out of the routes (r.mu held).
func (c *Call) unroute(p *Party) {
	r := &c.routes
	r.unhear(p)
	if r.convFrom == p {
		r.convListen.Stop()
		r.convListen, r.convFrom = nil, nil
	}
	kept := r.parties[:0]
	for _, q := range r.parties {
		if q == p {
			continue
		}
		kept = append(kept, q)
		if q.hears.party == p {
			r.unhear(q)
			q.hears = Nothing()
		}
	}
	r.parties = kept
	r.publish()
}

// release hangs up and closes a party's leg.
func (c *Call) release(p *Party, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), hangupTimeout)
	defer cancel()
	if p.leg.Context().Err() == nil {
		if err := p.leg.Hangup(ctx, reason); err != nil {
			c.log.Debug().Err(err).Str("party", p.leg.ID()).Msg("party hangup")
		}
	}
	if err := p.leg.Close(); err != nil {
		c.log.Debug().Err(err).Str("party", p.leg.ID()).Msg("close party")
	}
	c.noteLeft(p, reason)
	c.log.Info().Str("party", p.leg.ID()).Str("reason", reason).Msg("party left")
}

// dropOthers ends every party but the caller (the call is over).
func (c *Call) dropOthers(reason string) {
	r := &c.routes
	r.mu.Lock()
	var others []*Party
	for _, p := range r.parties {
		if p != c.caller {
			others = append(others, p)
		}
	}
	for _, p := range others {
		c.unroute(p)
	}
	r.mu.Unlock()
	for _, p := range others {
		c.release(p, reason)
	}
}

// hearers are the parties that hear p (a bridge), for its keys.
func (c *Call) hearers(p *Party) []*Party {
	r := &c.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Party
	for _, q := range r.parties {
		if q.hears.kind == sourceParty && q.hears.party == p {
			out = append(out, q)
		}
	}
	return out
}

// heardByConversation reports whether the conversation hears p.
func (c *Call) heardByConversation(p *Party) bool {
	r := &c.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.convFrom == p
}
