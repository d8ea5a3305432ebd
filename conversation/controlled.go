package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"switchboard/agent"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/realtime"
	"switchboard/stream"
)

// The appliance's own server events, sent to a controller beside the
// model's events (their type names carry the switchboard. prefix so they
// never collide with the protocol's):
//
//	switchboard.call.state     {"type":…, "event_id":…, "call_id":…, "state":"ringing"|"active"|"ended", "reason":…}
//	switchboard.call.transfer  {"type":…, "event_id":…, "call_id":…, "target_uri":…, "status":"accepted"|"progress"|"completed"|"failed", "sip_status":202}
//	                           (a REFER of /v1/realtime/calls/{id}/refer); a transfer of /v1/calls/{id}/transfer adds
//	                           "transfer_id", "mode" and "reason", its status one of package transfer's steps
const (
	EventCallState    = "switchboard.call.state"
	EventCallTransfer = "switchboard.call.transfer"
)

// Errors of Attach.
var (
	// ErrControllerAttached means another controller holds the call.
	ErrControllerAttached = errors.New("conversation: another controller holds this call")
	// ErrCallOver means the call has ended (or is ending).
	ErrCallOver     = errors.New("conversation: the call has ended")
	errNoController = errors.New("no controller attached within the ring timeout")
)

// Defaults of ControlledOptions.
const (
	DefaultRingTimeout     = 20 * time.Second
	DefaultControllerGrace = 30 * time.Second
	// DefaultControllerBuffer is how many events may wait for a slow
	// controller before it is dropped.
	DefaultControllerBuffer = 1024
)

// ControlledOptions configure one controlled conversation.
type ControlledOptions struct {
	// Engine is the realtime engine's name in RuntimeOptions.Engines
	// (default "echo").
	Engine string
	// RingTimeout is how long the caller hears ringing while the
	// appliance waits for a controller (default 20 s); then 480. It
	// replaces the call manager's answer timeout for this call.
	RingTimeout time.Duration
	// Grace is how long the call goes on, with the last configuration,
	// after its controller dropped (default 30 s); then it ends unless a
	// controller attached again.
	Grace time.Duration
	// Buffer is the controller's event queue (default 1024); a
	// controller that falls that far behind is disconnected.
	Buffer int
	// direct marks a direct session: its controller is the caller's own
	// event channel, no webhook is told.
	direct bool
	// HealthInterval is how often the controller gets
	// switchboard.call.media_health (default 5 s).
	HealthInterval time.Duration
}

// Controlled is the conversation of a webhook-routed call: the same
// bridge as an agent's (audio between the phone and a model session,
// barge-in, DTMF), steered by a controller over /v1/realtime?call_id=.
// While the caller hears ringing it POSTs realtime.call.incoming to the
// number's webhook (incoming.go) and waits for the first controller, then
// opens the model session; the call is answered once it is ready. Its
// lifecycle (transfers, the end) goes to the same webhook.
type Controlled struct {
	b     *bridge
	phone call.Phone
	hooks Webhooks
	opts  ControlledOptions
	log   zerolog.Logger

	attached     chan struct{} // closed when the first controller starts
	attachOne    sync.Once
	ready        chan struct{} // closed once the model session is open
	over         chan struct{} // closed by Close
	closeOnce    sync.Once
	stopAnnounce context.CancelFunc
	wg           sync.WaitGroup
	seq          atomic.Uint64
	// streamed is closed once a bot's stream took the call (handed);
	// streaming reserves the call for one SendToStream at a time.
	streamed   chan struct{}
	streamOnce sync.Once
	handed     atomic.Pointer[stream.Stream]

	mu        sync.Mutex
	cur       *ControllerSession
	grace     *time.Timer
	stop      context.CancelFunc // ends the bridge's Run
	endReason string
	endedBy   string
	closed    bool
	// endHeaders go with the BYE of a Hangup.
	endHeaders []call.Header
	// decided: the ringing call was answered (a controller started, or
	// accept) or rejected (rejectStatus, the SIP status); incoming.go.
	decided      bool
	rejectStatus int
	// The model session's opening, which every controller gets: the
	// session in force (its session.created, then each session.updated)
	// once modelOpen, and its conversation.created once it came.
	modelOpen bool
	modelCfg  realtime.SessionConfig
	modelConv *realtime.ConversationCreated
	// convOver says why the conversation ended while the call goes on
	// (a supervisor took over): no controller steers it any more.
	convOver  string
	streaming bool
}

var _ call.Conversation = (*Controlled)(nil)

// Controlled returns the controlled conversation of the call on p, whose
// events go to hooks. The session starts with no instructions, the default
// voice, server VAD and 24 kHz PCM both ways; the controller configures
// the rest with session.update.
func (r *Runtime) Controlled(p call.Phone, hooks Webhooks, opts ControlledOptions) *Controlled {
	if opts.Engine == "" {
		opts.Engine = agent.EngineEcho
	}
	if opts.RingTimeout <= 0 {
		opts.RingTimeout = DefaultRingTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultControllerGrace
	}
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultControllerBuffer
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	cfg := &agent.Config{ID: "controlled", Name: "controlled", Settings: agent.Settings{Engine: opts.Engine, Voice: agent.DefaultVoice,
		Model: agent.DefaultModel, Fallback: agent.FallbackRefuse}}
	log := p.Logger().With().Str("route", "webhook").Logger()
	b := newBridge(r, cfg, p, log)
	b.external = true
	b.sessCfg.Tools = nil
	empty := ""
	b.sessCfg.Instructions = &empty
	cc := &Controlled{b: b, phone: p, hooks: hooks, opts: opts, log: log, attached: make(chan struct{}), ready: make(chan struct{}),
		over: make(chan struct{}), streamed: make(chan struct{})}
	b.Observe(cc)
	b.reporter = cc
	return cc
}

// config returns a copy of the bridge's session configuration.
func (b *bridge) config() realtime.SessionConfig {
	b.cfgMu.Lock()
	defer b.cfgMu.Unlock()
	return b.sessCfg.Clone()
}

// mergeConfig applies a session.update to the configuration a
// reconnect reopens with. The audio formats stay the call's own (the
// model's side of its audio path).
func (b *bridge) mergeConfig(u realtime.SessionConfig) {
	b.cfgMu.Lock()
	defer b.cfgMu.Unlock()
	b.sessCfg.Merge(u)
	if a := b.sessCfg.Audio; a != nil {
		if a.Input != nil {
			a.Input.Format = b.modelFormat()
		}
		if a.Output != nil {
			a.Output.Format = b.modelFormat()
		}
	}
}

// modelFormat is the audio format of the bridge's session (an echo
// agent's follows its caller: adopt).
func (b *bridge) modelFormat() *realtime.AudioFormat {
	return audioFormat(realtimeFormatOf(b.format))
}

// ID is the call id.
func (cc *Controlled) ID() string { return cc.phone.ID() }

// Format is the session's audio: PCM16 at 24 kHz.
func (cc *Controlled) Format() media.Format { return cc.b.Format() }

// Keypad is the default keypad policy.
func (cc *Controlled) Keypad() call.KeypadSettings { return cc.b.Keypad() }

// Recording is false: a webhook-routed call is recorded when its number
// asks for it.
func (cc *Controlled) Recording() bool { return false }

// Prepare announces the call to the number's webhook, waits for a
// controller (480 after the ring timeout) and opens the model session (503
// when the engine fails).
func (cc *Controlled) Prepare(ctx context.Context) error {
	callCtx := ctx
	actx, cancel := context.WithTimeout(callCtx, cc.opts.RingTimeout)
	cc.mu.Lock()
	cc.stopAnnounce = cancel
	cc.mu.Unlock()
	// A call the appliance placed is announced by its POST /v1/calls
	// answer (the call id), not by realtime.call.incoming.
	if !cc.opts.direct && cc.phone.Info().Direction != call.DirectionOutbound {
		cc.wg.Add(1)
		go func() {
			defer cc.wg.Done()
			defer contain(cc.log, cc.phone, "announce")
			cc.announce(actx)
		}()
	}
	ring := time.NewTimer(cc.opts.RingTimeout)
	defer ring.Stop()
	select {
	case <-cc.attached:
	case <-cc.streamed:
		return nil // the stream is open: the call is answered
	case <-ring.C:
		cc.setEnd("system", "")
		return &call.RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errNoController}
	case <-callCtx.Done():
		return context.Cause(callCtx)
	}
	if err := cc.rejected(); err != nil {
		return err
	}
	octx, ocancel := context.WithTimeout(callCtx, cc.opts.RingTimeout)
	defer ocancel()
	cc.b.adopt(cc.phone)
	s, err := cc.b.open(octx)
	if err != nil {
		cc.log.Warn().Err(err).Str("engine", cc.opts.Engine).Msg("realtime engine unavailable for a controlled call")
		cc.setEnd("system", "")
		cc.notify(cc.errorEvent("engine_unavailable", "the model session could not be opened: "+err.Error()))
		return &call.RejectError{Status: 503, Reason: "Service Unavailable", Err: err}
	}
	cc.b.sess.Store(&sessionBox{s})
	cc.modelOpened()
	close(cc.ready)
	return nil
}

// Audio hands the caller's audio to the model session (to the bot once
// the call went to a stream).
func (cc *Controlled) Audio(pcm []byte) {
	if h := cc.handed.Load(); h != nil {
		h.Audio(pcm)
		return
	}
	cc.b.Audio(pcm)
}

// Key reports a key to the controller (to the bot once the call went to
// a stream).
func (cc *Controlled) Key(ev dtmf.Event) {
	if h := cc.handed.Load(); h != nil {
		h.Key(ev)
		return
	}
	cc.b.Key(ev)
}

// Run drives the conversation after answer until the call ends, Hangup
// is called, or the controller stays away longer than the grace.
func (cc *Controlled) Run(ctx context.Context) error {
	if h := cc.handed.Load(); h != nil {
		return cc.runStream(ctx, h)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cc.mu.Lock()
	cc.stop = cancel
	reason, hs := cc.endReason, cc.endHeaders
	cc.mu.Unlock()
	if reason != "" {
		return call.Hangup(reason, hs...)
	}
	cc.notify(cc.stateEvent(call.StateActive, ""))
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		defer contain(cc.log, cc.phone, "health")
		cc.watchHealth(rctx)
	}()
	err := cc.b.Run(rctx)
	if cause := context.Cause(ctx); errors.Is(cause, call.ErrConversationEnded) {
		cc.conversationOver(cause.Error())
		return nil
	}
	if h := cc.handed.Load(); h != nil && ctx.Err() == nil {
		return cc.runStream(ctx, h)
	}
	cc.mu.Lock()
	reason, hs = cc.endReason, cc.endHeaders
	cc.mu.Unlock()
	if reason != "" && ctx.Err() == nil {
		return call.Hangup(reason, hs...)
	}
	return err
}

// Hangup ends the call with a BYE carrying reason (and headers); by says
// who asked ("controller" for the hangup endpoint). It does nothing before
// answer (the caller of the API checks the call's state) or once ending.
// Once the conversation is over (a supervisor took over) it hangs the
// call up itself.
func (cc *Controlled) Hangup(reason, by string, headers ...call.Header) {
	cc.mu.Lock()
	if cc.endReason != "" {
		cc.mu.Unlock()
		return
	}
	cc.endReason, cc.endHeaders = reason, headers
	if cc.endedBy == "" {
		cc.endedBy = by
	}
	stop, over := cc.stop, cc.convOver != ""
	cc.mu.Unlock()
	switch {
	case over:
		cc.phone.Hangup(reason, headers...)
	case stop != nil:
		stop()
	}
}

// conversationOver ends the controller's part once the conversation ended
// while the call goes on: the controller is told why and its socket
// closes; none may attach again, and the call's end still reaches the
// webhook.
func (cc *Controlled) conversationOver(reason string) {
	cc.mu.Lock()
	cc.convOver, cc.stop = reason, nil
	cur := cc.cur
	cc.cur = nil
	if cc.grace != nil {
		cc.grace.Stop()
		cc.grace = nil
	}
	cc.mu.Unlock()
	if cur != nil {
		cur.deliver(cc.stateEvent(call.StateActive, reason))
		cur.end(reason)
	}
	cc.log.Info().Str("reason", reason).Msg("controller released: the conversation ended, the call goes on")
}

func (cc *Controlled) setEnd(by, reason string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.endedBy == "" {
		cc.endedBy = by
	}
	if cc.endReason == "" {
		cc.endReason = reason
	}
}

// Tell adds a system message to the model's conversation and asks it to
// answer (a failed transfer: the model tells the caller).
func (cc *Controlled) Tell(ctx context.Context, text string) error {
	s := cc.b.session()
	if s == nil {
		return realtime.ErrClosed
	}
	it := realtime.Item{Type: realtime.ItemMessage, Role: realtime.RoleSystem,
		Content: []realtime.ContentPart{{Type: realtime.ContentInputText, Text: text}}}
	if err := s.Send(ctx, &realtime.ConversationItemCreate{Item: it}); err != nil {
		return err
	}
	return s.Send(ctx, &realtime.ResponseCreate{})
}

// TransferUpdate reports a transfer's progress to the controller:
// status is accepted, progress, completed or failed.
func (cc *Controlled) TransferUpdate(target, status string, sipStatus int) {
	cc.notify(cc.custom(EventCallTransfer, map[string]any{"target_uri": target, "status": status, "sip_status": sipStatus}))
}

// Close ends the model session and the controller's socket (with the
// call's end reason), waits for Announce, then runs OnClose.
func (cc *Controlled) Close() error {
	var err error
	cc.closeOnce.Do(func() {
		snap := cc.phone.Snapshot()
		cc.mu.Lock()
		cc.closed = true
		cur := cc.cur
		cc.cur = nil
		if cc.grace != nil {
			cc.grace.Stop()
		}
		cancel, by := cc.stopAnnounce, cc.endedBy
		cc.mu.Unlock()
		close(cc.over)
		reason := snap.EndReason
		if reason == "" {
			reason = "call ended"
		}
		if cur != nil {
			cur.deliver(cc.stateEvent(call.StateEnded, reason))
			cur.end("call ended: " + reason)
		}
		if cancel != nil {
			cancel()
		}
		cc.wg.Wait()
		err = cc.b.Close()
		if h := cc.handed.Load(); h != nil {
			err = errors.Join(err, h.Close())
		}
		cc.ended(by)
	})
	return err
}

// ServerEvent forwards the model's events (and the bridge's own: DTMF,
// idle check-in) to the controller, except the audio, which belongs to
// the phone (agent.Observer).
func (cc *Controlled) ServerEvent(ev realtime.Event) {
	if _, ok := ev.(*realtime.ResponseOutputAudioDelta); ok {
		return
	}
	// The appliance's own events (a DTMF key, an idle check-in) carry an
	// event_id like the model's, which clients' schemas require.
	if realtime.EventID(ev) == "" {
		realtime.SetEventID(ev, cc.eventID())
	}
	cc.keepOpening(ev)
	cc.notify(ev)
}

// notify hands ev to the attached controller, if any.
func (cc *Controlled) notify(ev realtime.Event) {
	cc.mu.Lock()
	cur := cc.cur
	cc.mu.Unlock()
	if cur != nil {
		cur.deliver(ev)
	}
}

func (cc *Controlled) eventID() string {
	return "event_sb_" + strconv.FormatUint(cc.seq.Add(1), 36)
}

// custom builds an appliance event of type typ with the members of data
// plus type, event_id and call_id.
func (cc *Controlled) custom(typ string, data map[string]any) realtime.Event {
	data["type"], data["event_id"], data["call_id"] = typ, cc.eventID(), cc.phone.ID()
	raw, _ := json.Marshal(data)
	return &realtime.Unknown{Type: typ, Raw: raw}
}

func (cc *Controlled) stateEvent(st call.State, reason string) realtime.Event {
	d := map[string]any{"state": string(st)}
	if reason != "" {
		d["reason"] = reason
	}
	return cc.custom(EventCallState, d)
}

func (cc *Controlled) errorEvent(code, msg string) realtime.Event {
	return &realtime.ErrorEvent{Header: realtime.Header{EventID: cc.eventID()},
		Error: realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: code, Message: msg}}
}

// Attach reserves the call for a new controller: ErrControllerAttached
// when another one holds it, ErrCallOver once it ended. The session
// begins (session.created, conversation.created, the call's state) when
// Start is called, once the WebSocket is up; Close releases it.
func (cc *Controlled) Attach() (*ControllerSession, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	switch {
	case cc.closed || cc.endReason != "":
		return nil, ErrCallOver
	case cc.convOver != "":
		return nil, call.ErrConversationEnded
	case cc.cur != nil:
		return nil, ErrControllerAttached
	}
	if cc.grace != nil {
		cc.grace.Stop()
		cc.grace = nil
	}
	s := &ControllerSession{cc: cc, events: make(chan realtime.Event, cc.opts.Buffer), done: make(chan struct{})}
	cc.cur = s
	return s, nil
}

// detach releases s; once a controller has been attached, the call goes
// on for the grace time, then ends unless another one attaches.
func (cc *Controlled) detach(s *ControllerSession) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.cur != s {
		return
	}
	cc.cur = nil
	if cc.closed || !s.started || cc.convOver != "" || cc.handed.Load() != nil {
		return
	}
	cc.log.Info().Dur("grace", cc.opts.Grace).Msg("controller detached: the call goes on with the last configuration")
	cc.grace = time.AfterFunc(cc.opts.Grace, func() {
		cc.mu.Lock()
		gone := cc.cur == nil && !cc.closed
		cc.mu.Unlock()
		if gone {
			cc.log.Info().Msg("no controller came back within the grace: ending the call")
			cc.Hangup("controller gone", "system")
		}
	})
}
