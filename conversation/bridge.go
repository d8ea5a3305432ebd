package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"switchboard/agent"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
	xfer "switchboard/transfer"
)

// bridge is the conversation of one call with an agent: it joins the
// phone (call.Phone) and the model session (realtime.Session). Prepare
// opens and configures the session while the caller hears ringing; Run
// owns everything after answer in one goroutine, which drives one small
// type per concern (turn taking, tools, transfer, the STT fallback, the
// history, the keypad), each with its own state and only the roles of
// the call it uses.
type bridge struct {
	rt      *Runtime
	cfg     *agent.Config
	log     zerolog.Logger
	sessCfg realtime.SessionConfig
	// cfgMu guards sessCfg, which a controller's session.update changes
	// from its own goroutine (controlled.go).
	cfgMu sync.Mutex
	// external leaves function calls to a controller (controlled.go).
	external bool
	// openedCfg is the configuration the engine reported in force when the
	// session opened (its session.created, or the session.updated that
	// open took instead), written by open: a controller's session.created
	// (controlled.go).
	openedCfg realtime.SessionConfig
	// vars are the call's variables (context.go): custom tools get them,
	// transfer targets' headers are rendered with them.
	vars agent.Vars

	// format is the session's audio both ways: PCM16 at 24 kHz, or G.711
	// at 8 kHz passed through untouched when the caller speaks it.
	format   media.Format
	sess     atomic.Pointer[sessionBox]
	failure  error // the engine failed before answer and the fallback apologizes
	observer atomic.Pointer[observerBox]
	phone    call.Phone
	wg       sync.WaitGroup // the conversation's goroutines (spawn)

	// Run goroutine state: the concerns, and the session's own.
	turns       *turnTaking
	tools       *tools
	transfer    *transfer
	stt         *sttFallback // nil without a Transcriber
	hist        history      // re-seeds a new session after a reconnect
	keypad      *keypad      // the caller's keys: buffered here, flushed to the model
	reconnected time.Time    // last reconnect: one per ReconnectWindow
	greetQueued bool         // Prepare queued the greeting
	// Transfers that place a leg, and hold (handoff.go): requests of the
	// API come in on handoffs; the transfer in progress, its outcome on
	// handoffDone; the human the caller is bridged to; the caller held.
	handoffs    chan handoffCmd
	handoff     *handoffRun
	handoffDone inflight[handoffEnd]
	human       *call.Party
	held        bool
	reporter    xfer.Reporter // a controlled call's (nil for an agent's)
	runDone     chan struct{} // closed when Run returns
	// A placed call (outbound.go): the greeting waits for Opened.
	outbound bool
	opened   chan call.Opening
}

// ReconnectWindow bounds reconnects: a session lost again within this time
// of the last reconnect is not reopened (the fallback applies), so a
// flapping provider does not keep the caller in a loop.
const ReconnectWindow = time.Minute

type sessionBox struct{ s realtime.Session }

type observerBox struct{ o Observer }

// Observer sees every server event of a call's session (a controller); see
// (*bridge).Observe.
type Observer interface {
	ServerEvent(ev realtime.Event)
}

func newBridge(rt *Runtime, cfg *agent.Config, p call.Phone, log zerolog.Logger) *bridge {
	b := newBridgeIn(rt, cfg, p, log, rt.format(cfg.Settings.Engine))
	if cfg.Settings.Engine == agent.EngineEcho {
		// The echo engine speaks any format: a G.711 caller's own code
		// words then go to it and come back untouched (nothing resampled,
		// coded or decoded on the way; the turns it keeps are the caller's
		// bytes); a wideband caller keeps PCM16 at 24 kHz. Prepare learns
		// which (adopt). A stream's fallback keeps the stream's format
		// (newBridgeIn).
		b.format = call.LegG711Or(modelRate)
	}
	return b
}

// newBridgeIn is newBridge with the session's audio in format (a
// realtime format: a stream's fallback agent speaks the stream's µ-law).
func newBridgeIn(rt *Runtime, cfg *agent.Config, p call.Phone, log zerolog.Logger, format string) *bridge {
	b := &bridge{rt: rt, cfg: cfg, phone: p, log: log, sessCfg: sessionConfig(cfg, format), format: audioFormatOf(format),
		opened: make(chan call.Opening, 1), handoffs: make(chan handoffCmd), handoffDone: newInflight[handoffEnd](1), runDone: make(chan struct{})}
	st, o := &cfg.Settings, &rt.opts
	b.turns = newTurnTaking(p, p, b.send, b.notify, o.CancelGrace, time.Duration(st.IdleTimeoutMS)*time.Millisecond, log)
	b.tools = newTools(p, p, p, b.send, b.spawn, log)
	b.tools.caller, b.tools.callID, b.tools.delay, b.tools.rate = o.Tools, p.ID(), o.ComfortDelay, b.format.Rate
	b.transfer = newTransfer(p, p, p, b.send, b.spawn, log)
	b.transfer.targets, b.transfer.headers, b.transfer.handoff = st.TransferTargets, b.targetHeaders, b.startHandoff
	b.keypad = newKeypad(st.DTMF, o.DTMFIdle, p, p, b.spawn, b.userTurn, log)
	if o.Transcriber != nil { // its recorder follows the call's audio (adopt)
		b.stt = newSTTFallback(o.Transcriber, b.format, rt.sttBounds, p, &b.hist, b.spawn, log)
		b.stt.wait, b.stt.timeout, b.stt.piece = o.TranscriptWait, o.TranscribeTimeout, o.TranscribePiece
	}
	return b
}

// setVars gives the conversation the call's variables (context.go).
func (b *bridge) setVars(v agent.Vars) {
	b.vars = v
	b.tools.vars = v
}

// spawn runs f in a goroutine the bridge owns: Close waits for it, and a
// panic in it ends only this call.
func (b *bridge) spawn(where string, f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer contain(b.log, b.phone, where)
		f()
	}()
}

// notify shows ev to the call's observer, if any.
func (b *bridge) notify(ev realtime.Event) {
	if o := b.observer.Load(); o != nil {
		o.o.ServerEvent(ev)
	}
}

// Format is the session's audio format (call.Conversation).
func (b *bridge) Format() media.Format { return b.format }

// audioFormatOf is the call's audio format for a realtime format.
func audioFormatOf(format string) media.Format {
	switch format {
	case realtime.FormatPCMU:
		return media.FormatPCMU
	case realtime.FormatPCMA:
		return media.FormatPCMA
	}
	return media.PCM16(modelRate)
}

// realtimeFormatOf is the realtime format of a call's audio format.
func realtimeFormatOf(f media.Format) string {
	switch f {
	case media.FormatPCMU:
		return realtime.FormatPCMU
	case media.FormatPCMA:
		return realtime.FormatPCMA
	}
	return realtime.FormatPCM
}

// modelRate is the rate of PCM16 audio with the model ("audio/pcm").
const modelRate = 24000

func (b *bridge) session() realtime.Session {
	if v := b.sess.Load(); v != nil {
		return v.s
	}
	return nil
}

// Prepare opens the agent's session and waits until the engine confirmed
// its configuration (session.updated), at most the runtime's answer
// timeout; then it queues the greeting, so its first frame is the caller's
// first packet. When the engine cannot be reached, the agent's fallback
// decides: refuse the call (503) or answer and apologize.
func (b *bridge) Prepare(ctx context.Context) error {
	p := b.phone
	ctx, cancel := context.WithTimeout(ctx, b.rt.opts.AnswerTimeout)
	defer cancel()
	b.adopt(p)
	s, err := b.open(ctx)
	if err != nil {
		b.log.Warn().Err(err).Str("engine", b.cfg.Settings.Engine).Msg("realtime engine unavailable")
		if b.cfg.Settings.Fallback == agent.FallbackApologize {
			b.failure = err
			return nil
		}
		return &call.RejectError{Status: 503, Reason: "Service Unavailable", Err: err}
	}
	b.sess.Store(&sessionBox{s})
	if b.outbound = p.Info().Direction == call.DirectionOutbound; !b.outbound {
		b.queueGreeting(p)
	}
	return nil
}

// adopt takes what the call resolved before its session opens: the format
// of a bridge that follows the leg (an echo agent: the caller's G.711,
// else PCM16 at 24 kHz) into the session's configuration, and the rate of
// the caller's audio, which the STT fallback keeps.
func (b *bridge) adopt(p call.Phone) {
	if b.format.Encoding == call.LegFormat.Encoding {
		b.format = p.Format()
		b.cfgMu.Lock()
		if a := b.sessCfg.Audio; a != nil && a.Input != nil && a.Output != nil {
			a.Input.Format, a.Output.Format = b.modelFormat(), b.modelFormat()
		}
		b.cfgMu.Unlock()
		b.tools.rate = b.format.Rate
	}
	b.stt.adopt(b.format, p.Info().Rate)
}

// open opens a session and waits for its session.created, which reports
// the configuration in force (an engine applies it before; a
// session.updated is taken the same way).
func (b *bridge) open(ctx context.Context) (realtime.Session, error) {
	eng, ok := b.rt.opts.Engines[b.cfg.Settings.Engine]
	if !ok || eng == nil {
		return nil, fmt.Errorf("engine %q is not configured", b.cfg.Settings.Engine)
	}
	s, err := eng.Open(ctx, b.config())
	if err != nil {
		b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderOpen)
		return nil, fmt.Errorf("open %s session: %w", b.cfg.Settings.Engine, err)
	}
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				err := s.Err()
				s.Close()
				b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderOpen)
				return nil, fmt.Errorf("session ended before it was configured: %w", err)
			}
			switch e := ev.(type) {
			case *realtime.SessionCreated:
				b.stt.sessionConfig(e.Session)
				b.openedCfg = e.Session
				return s, nil
			case *realtime.SessionUpdated:
				b.stt.sessionConfig(e.Session)
				b.openedCfg = e.Session
				return s, nil
			case *realtime.ErrorEvent:
				b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderErrorEvent)
				b.log.Warn().Str("code", e.Error.Code).Str("message", e.Error.Message).Msg("session configuration error")
			}
		case <-ctx.Done():
			s.Close()
			b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderOpen)
			return nil, fmt.Errorf("session not ready: %w", context.Cause(ctx))
		}
	}
}

// Audio hands the caller's audio to the session; it never blocks. For a
// G.711 session the 8 kHz PCM is coded back to G.711 (exact for every
// code the caller sent), so the provider gets the phone's bytes.
func (b *bridge) Audio(pcm []byte) {
	b.stt.audio(pcm)
	s := b.session()
	if s == nil {
		return
	}
	_ = s.AppendAudio(pcm)
}

// Observe attaches o to the call's server events (nil detaches).
func (b *bridge) Observe(o Observer) {
	if o == nil {
		b.observer.Store(nil)
		return
	}
	b.observer.Store(&observerBox{o})
}

// Close ends the session and waits for the conversation's goroutines.
func (b *bridge) Close() error {
	var err error
	if s := b.session(); s != nil {
		err = s.Close()
	}
	b.wg.Wait()
	return err
}

// tick is how often Run checks its deadlines (cancel grace, idle, drained
// playout, comfort tone).
const tick = 20 * time.Millisecond

// Run drives the conversation after answer.
func (b *bridge) Run(ctx context.Context) error {
	defer close(b.runDone)
	defer b.released(ctx)
	defer b.stt.drop()
	if b.failure != nil {
		return b.apologize(ctx, b.failure)
	}
	s := b.session()
	if !b.outbound {
		b.greet(ctx)
	}
	b.renderPrompts(ctx)
	var maxC <-chan time.Time
	if d := b.cfg.Settings.MaxDurationS; d > 0 {
		t := time.NewTimer(time.Duration(d) * time.Second)
		defer t.Stop()
		maxC = t.C
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	// A placed call's answer comes once (Opened), so the loop stops waiting
	// for it then. Every call waits for it before: a controlled call opens
	// its model session outside Prepare, so b.outbound does not say it.
	opened := b.opened
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-s.Events():
			if !ok {
				b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderDropped)
				ns, err := b.reconnect(ctx, s)
				if err != nil {
					return b.apologize(ctx, err)
				}
				s = ns
				continue
			}
			b.notify(ev)
			b.handle(ctx, ev, time.Now())
			// Played (copied into the playout) and seen by the observer,
			// which does not keep audio: the delta's memory serves the next.
			realtime.Release(ev)
		case r := <-b.tools.done.wait():
			b.tools.finished(ctx, r, b.turns.active, time.Now())
		case ev := <-b.keypad.keys:
			if err := b.keypad.key(ctx, ev); err != nil {
				return err
			}
		case o := <-opened:
			opened = nil
			b.speakFirst(ctx, o)
		case r := <-b.stt.results():
			b.stt.transcribed(r)
		case err := <-b.transfer.done.wait():
			b.transfer.done.got()
			if err == nil {
				return call.Hangup("transferred")
			}
			b.tools.busyEnd(b.turns.active, time.Now())
			b.transfer.failed(ctx, err)
		case cmd := <-b.handoffs:
			b.command(ctx, cmd)
		case d := <-b.handoffDone.wait():
			if err := b.handoffEnded(ctx, d); err != nil {
				if errors.Is(err, errHandedOff) {
					return b.handedOff(ctx, s)
				}
				return err
			}
		case <-b.humanGone():
			return call.Hangup("the transfer target hung up")
		case <-maxC:
			b.log.Info().Int("max_duration_s", b.cfg.Settings.MaxDurationS).Msg("maximum call duration reached")
			return call.Hangup("maximum call duration reached")
		case now := <-ticker.C:
			if err := b.onTick(ctx, now); err != nil {
				return err
			}
		}
	}
}

// released closes the model session when the conversation ended before
// the call (call.ErrConversationEnded: a supervisor took over): nothing
// will speak to it again, and the call goes on without it. Close still
// comes at the call's end.
func (b *bridge) released(ctx context.Context) {
	cause := context.Cause(ctx)
	if !errors.Is(cause, call.ErrConversationEnded) {
		return
	}
	if s := b.session(); s != nil {
		_ = s.Close()
	}
	b.log.Info().Str("reason", cause.Error()).Msg("model session closed: the call goes on without it")
}

// handle hands one server event to the concerns it concerns.
func (b *bridge) handle(ctx context.Context, ev realtime.Event, now time.Time) {
	switch e := ev.(type) {
	case *realtime.ResponseOutputAudioDelta:
		b.phone.Play(e.ItemID, e.Delta)
	case *realtime.ResponseCreated:
		b.turns.responseCreated()
	case *realtime.ResponseOutputItemAdded:
		b.turns.itemAdded(e.Item)
	case *realtime.SessionUpdated:
		b.stt.sessionConfig(e.Session)
	case *realtime.InputAudioBufferSpeechStarted:
		b.stt.speechStarted(e.ItemID)
		b.turns.quiet()
		b.keypad.speechStarted(ctx, now)
		b.turns.bargeIn(ctx, now)
	case *realtime.InputAudioBufferSpeechStopped:
		b.turns.quiet()
		b.stt.turnEnded(e.ItemID, now)
	case *realtime.ResponseDone:
		b.turns.responseDone(now)
	case *realtime.ResponseOutputAudioTranscriptDone:
		if e.Transcript != "" {
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: e.Transcript})
			b.hist.remember(realtime.Item{Type: realtime.ItemMessage, Role: realtime.RoleAssistant,
				Content: []realtime.ContentPart{{Type: realtime.ContentOutputText, Text: e.Transcript}}})
		}
	case *realtime.InputAudioTranscriptionCompleted:
		b.stt.providerTranscribed(e.ItemID)
		if e.Transcript != "" {
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "user", Text: e.Transcript})
			b.hist.remember(realtime.UserText(e.Transcript))
		}
	case *realtime.InputAudioTranscriptionFailed:
		b.stt.transcribeNow(e.ItemID)
	case *realtime.ResponseFunctionCallArgumentsDone:
		b.functionCall(ctx, e, now)
	case *realtime.ErrorEvent:
		b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderErrorEvent)
		b.log.Warn().Str("code", e.Error.Code).Str("type", e.Error.Type).Str("message", e.Error.Message).Msg("realtime error event")
	}
}

// functionCall hands a function the model called to the concern that
// runs it (a controller runs its own: the call is only noted).
func (b *bridge) functionCall(ctx context.Context, e *realtime.ResponseFunctionCallArgumentsDone, now time.Time) {
	b.phone.Note(call.Note{Kind: call.NoteToolCall, Text: e.Name, Data: map[string]string{"call_id": e.CallID, "arguments": e.Arguments}})
	if b.external {
		return
	}
	switch e.Name {
	case agent.ToolEndCall:
		var args struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		reason := "agent ended the call"
		if args.Reason != "" {
			reason += ": " + args.Reason
		}
		b.turns.endAfterAnswer(reason)
		b.tools.output(ctx, e.CallID, e.Name, `{"ok":true}`, false)
	case agent.ToolSendDTMF:
		b.tools.sendDTMF(ctx, e.CallID, e.Arguments, now)
	case agent.ToolTransferCall:
		var args struct {
			Target  string `json:"target"`
			Summary string `json:"summary"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		if err := b.busyWith(); err != nil {
			b.tools.output(ctx, e.CallID, e.Name, errorJSON(err.Error()), true)
			return
		}
		if b.transfer.request(e.CallID, args.Target, args.Summary) {
			b.turns.quiet()
			return
		}
		b.tools.output(ctx, e.CallID, e.Name, errorJSON("unknown transfer target "+args.Target), true)
	default:
		for _, t := range b.cfg.Settings.Tools {
			if t.Name == e.Name {
				b.tools.run(ctx, t, e.CallID, e.Arguments, now)
				return
			}
		}
		b.tools.output(ctx, e.CallID, e.Name, errorJSON("unknown tool "+e.Name), true)
	}
}

// userTurn sends the caller's text (a flush of keys) to the model as a
// user turn. A response in progress is interrupted first, as the caller
// moved on.
func (b *bridge) userTurn(ctx context.Context, text string) {
	b.turns.interrupt(ctx)
	it := realtime.UserText(text)
	b.send(ctx, &realtime.ConversationItemCreate{Item: it})
	b.hist.remember(it)
	b.send(ctx, &realtime.ResponseCreate{})
}

// send sends ev to the current session (a sendFunc).
func (b *bridge) send(ctx context.Context, ev realtime.Event) {
	if s := b.session(); s != nil {
		b.sendTo(ctx, s, ev)
	}
}

func (b *bridge) sendTo(ctx context.Context, s realtime.Session, ev realtime.Event) {
	if err := s.Send(ctx, ev); err != nil && !errors.Is(err, realtime.ErrClosed) {
		b.log.Warn().Err(err).Str("type", ev.EventType()).Msg("send to session")
	}
}

// onTick checks the concerns' deadlines, in this order: the barge-in's
// cancel grace, the end or the transfer waiting for the answer to play
// out, the idle check-in, the comfort, the keypad's idle flush, the turns
// due for the STT fallback.
func (b *bridge) onTick(ctx context.Context, now time.Time) error {
	b.turns.cancelDue(ctx, now)
	drained := b.turns.drained()
	if r := b.turns.ending(); r != "" && drained {
		return call.Hangup(r)
	}
	if b.transfer.due() && drained && b.transfer.step(ctx) {
		b.tools.busyStart(now)
	}
	if !b.away() {
		b.turns.idleDue(ctx, now)
	}
	b.tools.comfortDue(now)
	b.keypad.tick(ctx, now)
	b.stt.dispatch(ctx, now)
	return nil
}

// greet speaks the agent's greeting right after answer: rendered locally
// when a Greeter is set (no wait for the model), else by the model.
func (b *bridge) greet(ctx context.Context) {
	text := b.cfg.Settings.Greeting
	if text == "" {
		return
	}
	if g := b.rt.opts.Greeter; g != nil {
		var err error
		if !b.greetQueued {
			var pcm []byte
			if pcm, err = g.Render(ctx, text, b.cfg.Settings.Voice, b.format.Rate); err == nil {
				b.phone.PlayPCM(greetingItem, pcm)
			}
		}
		if err == nil {
			item := realtime.Item{Type: realtime.ItemMessage, Role: realtime.RoleAssistant,
				Content: []realtime.ContentPart{{Type: realtime.ContentOutputText, Text: text}}}
			b.send(ctx, &realtime.ConversationItemCreate{Item: item})
			b.hist.remember(item)
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: text})
			return
		}
		b.log.Warn().Err(err).Msg("greeting not rendered locally; the model says it")
	}
	instr := text
	if b.cfg.Settings.Engine != agent.EngineEcho {
		instr = "Greet the caller by saying exactly this, and nothing else: " + text
	}
	b.send(ctx, &realtime.ResponseCreate{Response: &realtime.ResponseParams{Instructions: instr}})
}

// greetAhead is how long Prepare may spend rendering a greeting that is
// not cached yet; past it, Run greets after the answer.
const greetAhead = 150 * time.Millisecond

// queueGreeting queues the greeting before the 200 OK, so its first frame
// is the caller's first packet: from the cache at once, or rendered now
// when it fits in greetAhead.
func (b *bridge) queueGreeting(p call.Phone) {
	g := b.rt.opts.Greeter
	if b.failure != nil || g == nil || b.cfg.Settings.Greeting == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), greetAhead)
	defer cancel()
	pcm, err := g.Render(ctx, b.cfg.Settings.Greeting, b.cfg.Settings.Voice, b.format.Rate)
	if err != nil {
		return
	}
	p.PlayPCM(greetingItem, pcm)
	b.greetQueued = true
}

// Items the appliance plays itself (never truncated in the model).
const (
	greetingItem      = "greeting"
	comfortItem       = "comfort"
	comfortPromptItem = "comfort_prompt"
	announceItem      = "transfer_announcement"
	apologyItem       = "apology"
)
