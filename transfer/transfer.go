package transfer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/media"
)

// Transfer is one transfer of one call, prepared by Service.Prepare and
// carried out by Run.
type Transfer struct {
	s      *Service
	c      Call
	req    Request
	id     string
	target Target
	log    zerolog.Logger

	rep   Reporter
	start time.Time
	// human is the human's party once their leg joined the call, leg
	// its leg.
	human *call.Party
	leg   Leg
	// wg counts the transfer's helpers (the briefing's rendering, the
	// REFER's transaction); Run waits for them.
	wg sync.WaitGroup
	// bg counts what outlives Run: the release of the human's leg once
	// the caller is back (Wait).
	bg sync.WaitGroup

	mu     sync.Mutex
	status Status
}

// ID is the transfer's id (tr_…).
func (t *Transfer) ID() string { return t.id }

// Request is the transfer as checked, its defaults filled.
func (t *Transfer) Request() Request { return t.req }

// Status is the transfer's last step ("" before Run).
func (t *Transfer) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// Run carries the transfer out and returns once it is decided: the
// caller bridged to the human or referred (the conversation then closes
// its model session, or ends the call), or, for every other outcome, the
// caller back with the conversation (it hears them again, and they hear
// it) and the human's leg being released (Wait waits for that). Each
// step goes to rep and to the call record. ctx is the call's: its end is
// the caller leaving.
func (t *Transfer) Run(ctx context.Context, rep Reporter) Result {
	t.rep, t.start = rep, time.Now()
	defer t.wg.Wait()
	t.log.Info().Str("target_uri", t.req.TargetURI).Dur("timeout", t.req.Timeout).Str("accept", string(t.req.Accept)).Msg("transfer started")
	res := t.run(ctx)
	if ctx.Err() != nil && res.Status != StatusReferred {
		res = Result{Status: StatusCallerLeft, Reason: "the caller hung up"}
	}
	switch {
	case res.Status == StatusBridged:
	case res.Status == StatusReferred:
	case res.Status == StatusCallerLeft:
		t.release("caller left")
	default:
		// The caller first: the human's leg is hung up in the background,
		// so a phone that never answers the BYE (gone from the network)
		// keeps neither the caller on hold nor the model waiting for the
		// outcome until the BYE times out.
		if err := Resume(t.c); err != nil {
			t.log.Warn().Err(err).Msg("caller not back with the conversation")
		}
		t.releaseLater("transfer " + string(res.Status))
	}
	t.update(res.Status, res.SIPStatus, res.Reason)
	t.log.Info().Str("status", string(res.Status)).Int("sip_status", res.SIPStatus).Str("reason", res.Reason).
		Bool("fell_back", res.FellBack).Dur("elapsed", time.Since(t.start)).Msg("transfer ended")
	return res
}

func (t *Transfer) run(ctx context.Context) Result {
	if err := t.hold(ctx); err != nil {
		return Result{Status: StatusFailed, Reason: "hold: " + err.Error()}
	}
	switch t.req.Mode {
	case ModeRefer:
		if t.req.Replaces {
			return t.attended(ctx)
		}
		res, _ := t.refer(ctx, false)
		return res
	case ModeAuto:
		res, fallback := t.refer(ctx, true)
		if !fallback {
			return res
		}
		t.log.Info().Str("reason", res.Reason).Msg("REFER not taken: bridging instead")
		refused := res.Reason
		res = t.bridged(ctx)
		res.FellBack = true
		if res.Reason == "" {
			res.Reason = "bridged: the REFER was not taken (" + refused + ")"
		}
		return res
	case ModeWarm:
		return t.warm(ctx)
	}
	return t.bridged(ctx)
}

// hold routes the caller to the hold audio and the conversation to
// nobody: from now on the caller hears neither the model nor silence.
func (t *Transfer) hold(ctx context.Context) error {
	return t.s.Hold(ctx, t.c, t.req.HoldAudio, t.req.Voice)
}

// bridged calls the human and connects the caller to them once they
// answer.
func (t *Transfer) bridged(ctx context.Context) Result {
	if res := t.dial(ctx); res != nil {
		return *res
	}
	return t.connect()
}

// warm calls the human, briefs them (the briefing is rendered while their
// phone rings), and connects the caller once they accept.
func (t *Transfer) warm(ctx context.Context) Result {
	brief := t.render(ctx)
	if res := t.dial(ctx); res != nil {
		return *res
	}
	if res := t.brief(ctx, brief); res != nil {
		return *res
	}
	return t.connect()
}

// connect makes the caller and the human hear each other; the
// conversation hears the caller only when asked to keep listening. While
// either one's phone holds the call, the other hears the transfer's hold
// audio instead (as a B2BUA plays music on hold to the other side).
func (t *Transfer) connect() Result {
	c, caller, human := t.c, t.c.Caller(), t.human
	human.OnKey(nil)
	held, err := t.s.HoldSource(c.Context(), t.req.HoldAudio, t.req.Voice)
	if err != nil {
		t.log.Warn().Err(err).Msg("hold audio for a party's hold: silence instead")
		held = call.Nothing()
	}
	for _, p := range []*call.Party{human, caller} {
		other := caller
		if p == caller {
			other = human
		}
		hear := func(holding bool) call.Source {
			if holding {
				return held
			}
			return call.FromParty(other)
		}
		if err := c.Hear(p, hear(other.PeerHolding())); err != nil {
			return Result{Status: StatusFailed, Reason: "bridge: " + err.Error()}
		}
		other.OnPeerHold(func(holding bool) {
			if err := c.Hear(p, hear(holding)); err != nil {
				t.log.Debug().Err(err).Bool("holding", holding).Msg("route for a party's hold")
			}
		})
	}
	var hears *call.Party
	if t.req.KeepListening {
		hears = caller
	}
	if err := c.ConversationHears(hears); err != nil {
		t.log.Debug().Err(err).Msg("conversation route after the bridge")
	}
	return Result{Status: StatusBridged, Human: human}
}

// Wait waits for what Run left running: the release of the human's leg
// after an outcome that put the caller back (its BYE may take up to the
// call's hangup timeout).
func (t *Transfer) Wait() { t.bg.Wait() }

// release hangs up the human's leg, if it joined.
func (t *Transfer) release(reason string) {
	if t.human == nil {
		return
	}
	t.leave(t.human, reason)
	t.human = nil
}

// releaseLater hangs up the human's leg, if it joined, in the background
// (Wait waits for it).
func (t *Transfer) releaseLater(reason string) {
	h := t.human
	if h == nil {
		return
	}
	t.human = nil
	t.bg.Add(1)
	go func() {
		defer t.bg.Done()
		t.leave(h, reason)
	}()
}

func (t *Transfer) leave(h *call.Party, reason string) {
	if err := t.c.Leave(h, reason); err != nil && !errors.Is(err, call.ErrNotInCall) {
		t.log.Debug().Err(err).Msg("human's leg not released")
	}
}

// update records a step: the call record, the reporter, the log.
func (t *Transfer) update(s Status, sipStatus int, reason string) {
	now := time.Now()
	u := Update{TransferID: t.id, Mode: t.req.Mode, TargetURI: t.req.TargetURI, Status: s, SIPStatus: sipStatus,
		Reason: reason, At: now, Elapsed: now.Sub(t.start)}
	t.mu.Lock()
	t.status = s
	t.mu.Unlock()
	n := note(u, t.req.By)
	if s == StatusAnswered && t.leg != nil {
		n.Data.(map[string]any)["leg"] = legData(t.leg)
	}
	t.c.Note(n)
	if t.rep != nil {
		t.rep.Update(u)
	}
	t.log.Debug().Str("status", string(s)).Int("sip_status", sipStatus).Str("reason", reason).Msg("transfer step")
}

// legData is the human's leg for the call record: its party, its SIP
// dialog, its codec.
func legData(l Leg) map[string]any {
	info := l.Info()
	d := map[string]any{"party_id": l.ID(), "sip_call_id": info.RemoteID, "from": info.From, "to": info.To}
	if c, ok := l.(interface{ Codec() string }); ok {
		d["codec"] = c.Codec()
	}
	return d
}

// codecs are the human's codecs in the order of the caller's law, so a
// G.711 bridge relays code words.
func (t *Transfer) codecs() []string {
	if a := t.c.Caller().Leg().Audio(); a != nil && a.Format() == media.FormatPCMA {
		return []string{"PCMA", "PCMU"}
	}
	return []string{"PCMU", "PCMA"}
}
