package call

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/dtmf"
	"switchboard/media"
)

// State is where a call is in its life.
type State string

// Call states.
const (
	StateRinging State = "ringing"
	StateActive  State = "active"
	StateEnded   State = "ended"
)

// Who ended a call.
const (
	EndedByCaller    = "caller"
	EndedByAppliance = "appliance"
	EndedByRejected  = "rejected"
)

// hangupTimeout bounds the BYE transaction of a hangup: RFC 3261's
// Timer F (64×T1, 32 s) is far longer than anyone waits for a call that
// is over; 10 s covers a retransmitted BYE on a lossy path.
const hangupTimeout = 10 * time.Second

// Call is one phone call: its parties (legs: the caller first, then
// whoever joins: a human the caller is handed to, a supervisor) and a
// Conversation (the model side), joined by routes the call owns: what
// each party hears (the conversation, another party, hold audio, nothing)
// and whom the conversation hears. It is owned by the goroutine that runs
// it; its getters are safe from any goroutine. *Call is the Phone its
// conversation sees.
type Call struct {
	m      *Manager
	caller *Party
	id     string
	log    zerolog.Logger

	route   Route
	info    LegInfo
	started time.Time
	// audioRate is the caller's own audio's rate (LegInfo.Rate), known
	// once its media started.
	audioRate atomic.Int64

	// format is the conversation's audio (LegFormat resolved); conv is
	// set once the conversation is prepared.
	format media.Format
	conv   atomic.Pointer[convHolder]
	// routes are the call's audio routes (party.go).
	routes routes
	health *health
	mon    *monitor
	// monitored: the Manager's monitor clock ticks mon (from Leg.Start
	// to teardown).
	monitored bool
	rec       atomic.Pointer[recBox]
	policy    dtmf.Policy
	// opening listens to a placed call's callee until the conversation
	// may speak (outbound.go); nil before the answer and for received
	// calls. helpers are the call's goroutines teardown waits for.
	opening atomic.Pointer[opening]
	helpers sync.WaitGroup

	mu         sync.Mutex
	state      State
	answered   time.Time
	ended      time.Time
	endedBy    string
	endReason  string
	finalStats media.StatsSnapshot
	finalMH    *MediaHealth
	notes      []Note
	// A placed call's dial and machine detection (outbound.go).
	dialProgress string
	sipStatus    int
	answeredBy   string
	// convEnded says why the conversation ended while the call goes on
	// (EndConversation); stopConv ends its Run.
	convEnded string
	stopConv  context.CancelCauseFunc
	// takingOver: a supervisor's takeover is under way (ReserveTakeOver).
	takingOver bool
}

var _ Phone = (*Call)(nil)

type convHolder struct{ c Conversation }

func newCall(m *Manager, leg Leg, log zerolog.Logger) *Call {
	info := leg.Info()
	started := info.Received
	if started.IsZero() {
		started = time.Now()
	}
	c := &Call{m: m, id: leg.ID(), log: log, route: info.Route, info: info, started: started, state: StateRinging,
		health: newHealth(m.opts.Health, m.opts.Metrics)}
	c.caller = &Party{c: c, leg: leg}
	c.mon = newMonitor(c.health, leg.Stats, c.degraded)
	if c.Outbound() {
		c.dialProgress = ProgressDialing
	}
	return c
}

// ID is the call id (a UUID).
func (c *Call) ID() string { return c.id }

// Route is where admission sent the call.
func (c *Call) Route() Route { return c.route }

// Info describes the caller.
func (c *Call) Info() LegInfo {
	i := c.info
	i.Rate = int(c.audioRate.Load())
	return i
}

// Logger is the call's logger (with call_id).
func (c *Call) Logger() zerolog.Logger { return c.log }

// Context ends with the caller's leg.
func (c *Call) Context() context.Context { return c.caller.leg.Context() }

// Snapshot is a consistent view of a call for the API and call records.
type Snapshot struct {
	ID          string
	NumberID    string
	PhoneNumber string
	TeamID      string
	From, To    string
	SIPCallID   string
	State       State
	Started     time.Time
	Answered    time.Time
	Ended       time.Time
	EndedBy     string
	EndReason   string
	// Route is "agent:<id>", "webhook:<id>", "stream" or "session".
	Route string
	// Channel is the leg's transport: "sip" or "webrtc".
	Channel string
	Media   media.StatsSnapshot
	// Health is how the call sounded (live figures while it runs).
	Health MediaHealth
	// Recorded says the call is (or was) recorded.
	Recorded bool
	Notes    []Note
	// Direction is DirectionOutbound for a placed call, else inbound.
	Direction string
	// Progress, SIPStatus, MachineDetection and AnsweredBy describe a
	// placed call's dial and the machine detection's verdict.
	Progress         string
	SIPStatus        int
	MachineDetection MachineDetection
	AnsweredBy       string
}

// Snapshot returns the call's current view.
func (c *Call) Snapshot() Snapshot {
	c.mu.Lock()
	s := Snapshot{ID: c.id, NumberID: c.route.NumberID, PhoneNumber: c.route.PhoneNumber, TeamID: c.route.TeamID,
		From: c.info.From, To: c.info.To, SIPCallID: c.info.RemoteID, State: c.state,
		Started: c.started, Answered: c.answered, Ended: c.ended, EndedBy: c.endedBy, EndReason: c.endReason, Media: c.finalStats,
		Route: c.route.String(), Channel: c.info.Kind, Notes: append([]Note(nil), c.notes...), Recorded: c.rec.Load() != nil,
		Direction: DirectionInbound, Progress: c.dialProgress, SIPStatus: c.sipStatus, MachineDetection: c.info.MachineDetection,
		AnsweredBy: c.answeredBy}
	if c.Outbound() {
		s.Direction = DirectionOutbound
	}
	final := c.finalMH
	c.mu.Unlock()
	if s.State != StateEnded {
		s.Media = c.caller.leg.Stats()
	}
	if final != nil {
		s.Health = *final
	} else {
		s.Health = c.mon.health()
	}
	return s
}

// MediaHealth is the call's media health so far (Phone).
func (c *Call) MediaHealth() MediaHealth {
	c.mu.Lock()
	final := c.finalMH
	c.mu.Unlock()
	if final != nil {
		return *final
	}
	return c.mon.health()
}

// degraded runs when the call crosses a health threshold (monitor
// goroutine).
func (c *Call) degraded(reason string, mh MediaHealth) {
	c.log.Warn().Str("reason", reason).Float64("window_loss_ratio", mh.WindowLossRatio).Str("one_way", mh.OneWay).
		Int64("no_inbound_audio_ms", mh.NoInboundAudioMS).Msg("media degraded")
	c.Note(Note{Kind: NoteMedia, Text: reason, Data: map[string]any{"window_loss_ratio": mh.WindowLossRatio,
		"one_way": mh.OneWay, "no_inbound_audio_ms": mh.NoInboundAudioMS}})
}

// Note adds an entry to the call record.
func (c *Call) Note(n Note) {
	if n.At.IsZero() {
		n.At = time.Now()
	}
	c.mu.Lock()
	c.notes = append(c.notes, n)
	c.mu.Unlock()
	if n.Kind == NoteTransfer || n.Kind == NoteSupervisor || n.Kind == NoteHold {
		c.changed()
	}
}

// changed tells the journal that the call changed in a way that must
// survive a crash (answer, transfer).
func (c *Call) changed() {
	if j := c.m.opts.Journal; j != nil {
		j.Changed(c)
	}
}

func (c *Call) setEnd(by, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endedBy == "" {
		c.endedBy, c.endReason = by, reason
	}
}

func (c *Call) getState() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// run drives the call: ringing, the conversation's choice, the media,
// the conversation's preparation, answer, the conversation, the teardown.
func (c *Call) run(ctx context.Context) {
	opts := c.m.opts
	leg := c.caller.leg
	defer c.teardown()
	defer c.contain("call", false)
	// Ringing goes out first: the caller hears ringback at once, whatever
	// the conversation takes to get ready.
	if err := leg.Ring(); err != nil {
		c.log.Debug().Err(err).Msg("180 not sent")
	}
	conv, err := opts.Router.Conversation(ctx, c)
	if err != nil {
		c.rejectErr(err, 500, "Server Internal Error")
		return
	}
	defer conv.Close()
	c.format = conv.Format()
	ks := conv.Keypad()
	inband := opts.Inband
	if ks.Inband != "" {
		inband = ks.Inband
	}
	// The number's own setting wins over the conversation's.
	if c.route.DTMFInband != "" {
		inband = c.route.DTMFInband
	}
	c.policy = ks.Policy
	tap := callTap{h: c.health, rec: &c.rec, mix: &c.routes.mixers}
	if err := leg.Start(partySink{c.caller}, LegOptions{Rate: c.format.Rate, Inband: inband, Tap: tap}); err != nil {
		c.log.Error().Err(err).Msg("media not started")
		c.rejectErr(err, 500, "Server Internal Error")
		return
	}
	c.caller.audio = leg.Audio()
	c.audioRate.Store(int64(c.caller.audio.Format().Rate))
	if c.format.Encoding == LegFormat.Encoding {
		c.format = legFormat(c.caller.audio.Format(), c.format)
	}
	if err := c.routes.addParty(c.caller); err != nil {
		c.reject(500, "Server Internal Error", err.Error(), 0)
		return
	}
	c.m.monitors.add(c.mon)
	c.monitored = true
	// The caller hears the conversation from the start: Prepare may queue
	// the greeting, which goes out first once the call is answered.
	if err := c.hear(c.caller, hearConversation()); err != nil {
		c.reject(500, "Server Internal Error", err.Error(), 0)
		return
	}
	if err := conv.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			c.setEnd(EndedByCaller, "canceled while ringing")
			return
		}
		c.rejectErr(err, 480, "Temporarily Unavailable")
		return
	}
	c.conv.Store(&convHolder{conv})
	// A placed call's callee reaches the conversation once the opening
	// says they are ready (outbound.go), unless it hears them from the
	// answer on (a bot's stream); a caller at once.
	if !c.Outbound() || hearsFromAnswer(conv) {
		if err := c.conversationHears(c.caller); err != nil {
			c.reject(500, "Server Internal Error", err.Error(), 0)
			return
		}
	}
	c.log.Debug().Str("media", c.routes.String()).Msg("media ready")
	if err := leg.Answer(ctx); err != nil {
		if c.Outbound() {
			c.dialFailed(conv, err)
			return
		}
		c.setEnd(EndedByCaller, "not answered: "+err.Error())
		return
	}
	answered := time.Now()
	c.health.answer(answered)
	c.m.opts.Metrics.answered.Inc()
	if (c.route.Recording || conv.Recording()) && c.m.opts.Recorder != nil {
		c.startRecording()
	}
	c.mu.Lock()
	c.state, c.answered = StateActive, answered
	c.mu.Unlock()
	c.changed()
	if c.Outbound() {
		c.progress(conv, Progress{Status: ProgressAnswered, SIPStatus: 200})
		c.startOpening(ctx, conv)
	}

	err = c.runConversation(ctx, conv)
	if c.ConversationEnded() != "" && ctx.Err() == nil {
		// The conversation ended on purpose (a supervisor took over):
		// the call lasts until one side hangs up.
		select {
		case <-ctx.Done():
		case <-leg.Context().Done():
		}
		c.setEnd(c.remoteParty(), causeText(context.Cause(leg.Context())))
		return
	}
	var he *HangupError
	switch {
	case ctx.Err() != nil:
		c.setEnd(c.remoteParty(), causeText(context.Cause(ctx)))
	case errors.As(err, &he):
		c.hangup(he.Reason, he.Headers...)
	case err != nil:
		c.log.Warn().Err(err).Msg("conversation failed")
		c.hangup("conversation failed")
	default:
		c.hangup("conversation ended")
	}
}

// remoteParty is who ended the call when the phone side did: the caller,
// or the callee of a placed call.
func (c *Call) remoteParty() string {
	if c.Outbound() {
		return EndedByCallee
	}
	return EndedByCaller
}

func causeText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// rejectErr refuses the call with the status err carries (a
// RejectError), else with status and reason.
func (c *Call) rejectErr(err error, status int, reason string) {
	var re *RejectError
	if errors.As(err, &re) {
		c.reject(re.Status, re.Reason, err.Error(), re.RetryAfter)
		return
	}
	c.reject(status, reason, err.Error(), 0)
}

func (c *Call) reject(status int, reason, why string, retryAfter time.Duration) {
	c.setEnd(EndedByRejected, rejectText(status, reason, why))
	if c.Outbound() {
		// A placed call refused before its dial (no conversation, no
		// controller): it failed without a SIP status of the callee's.
		c.mu.Lock()
		if c.dialProgress == ProgressDialing {
			c.dialProgress = ProgressFailed
		}
		c.mu.Unlock()
	}
	if err := c.caller.leg.Reject(status, reason, retryAfter); err != nil {
		c.log.Debug().Err(err).Msg("reject")
	}
}

func rejectText(status int, reason, why string) string {
	return fmt.Sprintf("%d %s: %s", status, reason, why)
}

// Hangup ends the call from the appliance's side without waiting: BYE
// with reason (and headers), and the call record says the appliance ended
// it.
func (c *Call) Hangup(reason string, headers ...Header) {
	c.goSafe("hangup", func() { c.hangup(reason, headers...) })
}

// hangup sends BYE with reason (once) and marks the appliance as the one
// who ended the call.
func (c *Call) hangup(reason string, headers ...Header) {
	c.setEnd(EndedByAppliance, reason)
	ctx, cancel := context.WithTimeout(context.Background(), hangupTimeout)
	defer cancel()
	if err := c.caller.leg.Hangup(ctx, reason, headers...); err != nil {
		c.log.Debug().Err(err).Msg("hangup")
	}
}

// teardown runs once the call is over: it ends the other parties, stops
// the media and records the final figures.
func (c *Call) teardown() {
	leg := c.caller.leg
	st := leg.Stats()
	if leg.Context().Err() == nil {
		c.hangup("call ended")
	}
	c.routes.stop()
	c.dropOthers("call ended")
	if err := leg.Close(); err != nil {
		c.log.Debug().Err(err).Msg("close leg")
	}
	c.stopRecording()
	c.helpers.Wait()
	if c.monitored {
		c.m.monitors.remove(c.mon)
		c.mon.tick() // the final figures
		c.mon.end()
	}
	mh := c.mon.health()
	c.mu.Lock()
	c.state, c.ended, c.finalStats, c.finalMH = StateEnded, time.Now(), st, &mh
	if c.endedBy == "" {
		c.endedBy, c.endReason = c.remoteParty(), causeText(context.Cause(leg.Context()))
	}
	answered, by := c.answered, c.endedBy
	c.mu.Unlock()
	var dur float64
	if !answered.IsZero() {
		dur = time.Since(answered).Seconds()
	}
	c.m.opts.Metrics.callEnded(by, dur)
	ev := c.log.Info().Str("ended_by", by).Uint64("rtp_in", st.PacketsIn).Uint64("rtp_out", st.PacketsOut).
		Int64("rtp_lost", st.Lost).Uint64("late_frames", st.Late).Dur("jitter", st.Jitter)
	if dur > 0 {
		ev = ev.Float64("duration_s", dur)
	}
	ev.Msg("call ended")
}

// Transfer asks the caller's side to call target instead (Phone).
func (c *Call) Transfer(ctx context.Context, target string, progress func(status int), headers ...Header) error {
	return c.caller.leg.Transfer(ctx, target, progress, headers...)
}

// SendDTMF plays digits to the caller: RFC 4733 events when the caller
// negotiated telephone-event, in-band tones otherwise. It returns once
// they are sent.
func (c *Call) SendDTMF(ctx context.Context, digits string) error {
	if err := dtmf.CheckDigits(digits); err != nil {
		return err
	}
	if c.getState() != StateActive {
		return ErrNotActive
	}
	if err := c.caller.leg.SendDTMF(ctx, digits); err != nil {
		return err
	}
	c.Note(Note{Kind: NoteDTMF, Text: "sent " + digits})
	return nil
}

// Leg is the call's first leg: the caller (or the callee of a placed
// call).
func (c *Call) Leg() Leg { return c.caller.leg }
