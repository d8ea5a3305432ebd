package conversation

import (
	"context"
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
)

// bridge is the conversation of one call with an agent: it joins the
// phone (call.Phone) and the model session (realtime.Session). Prepare
// opens and configures the session while the caller hears ringing; Run
// owns everything after answer in one goroutine.
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

	// Run goroutine state.
	phone       call.Phone
	respActive  bool
	assistant   map[string]bool // items that came from responses: truncatable
	history     []realtime.Item // re-seeds a new session after a reconnect
	cancelAt    time.Time       // send response.cancel then, if still active
	idleAt      time.Time       // check in then, if the caller stays silent
	endReason   string          // end once the current answer has played
	transferTo  *pendingTransfer
	toolsBusy   int
	toolStart   time.Time
	toolDone    chan toolResult
	comfort     []byte
	comfortSaid bool      // the comfort prompt was said in this busy spell
	promptUntil time.Time // the comfort prompt plays until then
	comfortText *prompt   // nil: no comfort prompt (tone only)
	announce    *prompt   // nil: no transfer announcement
	transferErr chan error
	keypad      *keypad   // the caller's keys: buffered here, flushed to the model
	reconnected time.Time // last reconnect: one per ReconnectWindow
	greetQueued bool      // Prepare queued the greeting
	// A placed call (outbound.go): the greeting waits for Opened.
	outbound bool
	opened   chan call.Opening
	wg       sync.WaitGroup

	// The STT fallback (nil turns without a Transcriber).
	turns       *turnAudio
	transcribes bool // the session has input transcription on (Prepare, then Run goroutine)
	sttPending  []sttTurn
	sttBusy     int
	sttDone     chan sttResult
	heardItems  map[string]bool // user items the provider transcribed
	histSeq     int             // items ever remembered (history is trimmed)
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

type pendingTransfer struct {
	callID, target, uri string
	headers             []call.Header // rendered with the call's variables
	announced, started  bool
}

type toolResult struct {
	callID, name, output string
}

func newBridge(rt *Runtime, cfg *agent.Config, p call.Phone, log zerolog.Logger) *bridge {
	format := rt.format(cfg.Settings.Engine)
	b := &bridge{rt: rt, cfg: cfg, phone: p, log: log, sessCfg: sessionConfig(cfg, format), format: audioFormatOf(format), assistant: map[string]bool{},
		toolDone: make(chan toolResult, 8), transferErr: make(chan error, 1), opened: make(chan call.Opening, 1)}
	b.keypad = newKeypad(cfg.Settings.DTMF, rt.opts.DTMFIdle, log)
	if rt.opts.Transcriber != nil {
		b.turns = newTurnAudio(b.format)
		b.sttDone = make(chan sttResult, maxTranscriptions)
		b.heardItems = map[string]bool{}
	}
	return b
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
				b.transcribes, b.openedCfg = hasTranscription(e.Session), e.Session
				return s, nil
			case *realtime.SessionUpdated:
				b.transcribes, b.openedCfg = hasTranscription(e.Session), e.Session
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
	if b.turns != nil {
		b.turns.add(pcm)
	}
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

// Close ends the session and waits for the tool goroutines.
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
	defer b.released(ctx)
	if b.failure != nil {
		return b.apologize(ctx, b.failure)
	}
	s := b.session()
	if !b.outbound {
		b.greet(ctx, s)
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
			if o := b.observer.Load(); o != nil {
				o.o.ServerEvent(ev)
			}
			b.handle(ctx, s, ev)
			// Played (copied into the playout) and seen by the observer,
			// which does not keep audio: the delta's memory serves the next.
			realtime.Release(ev)
		case r := <-b.toolDone:
			b.toolFinished(ctx, s, r)
		case ev := <-b.keypad.keys:
			if err := b.key(ctx, s, ev); err != nil {
				return err
			}
		case o := <-b.opened:
			b.speakFirst(ctx, s, o)
		case r := <-b.sttDone:
			b.transcribed(r)
		case err := <-b.transferErr:
			if err == nil {
				return call.Hangup("transferred")
			}
			b.transferFailed(ctx, s, err)
		case <-maxC:
			b.log.Info().Int("max_duration_s", b.cfg.Settings.MaxDurationS).Msg("maximum call duration reached")
			return call.Hangup("maximum call duration reached")
		case now := <-ticker.C:
			if err := b.onTick(ctx, s, now); err != nil {
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

// handle reacts to one server event.
func (b *bridge) handle(ctx context.Context, s realtime.Session, ev realtime.Event) {
	switch e := ev.(type) {
	case *realtime.ResponseOutputAudioDelta:
		b.phone.Play(e.ItemID, e.Delta)
	case *realtime.ResponseCreated:
		b.respActive = true
		b.idleAt = time.Time{}
	case *realtime.ResponseOutputItemAdded:
		if e.Item.Type == realtime.ItemMessage {
			b.assistant[e.Item.ID] = true
		}
	case *realtime.SessionUpdated:
		b.transcribes = hasTranscription(e.Session)
	case *realtime.InputAudioBufferSpeechStarted:
		if b.turns != nil {
			b.turns.start()
		}
		b.bargeIn(ctx, s)
	case *realtime.InputAudioBufferSpeechStopped:
		b.idleAt = time.Time{}
		b.turnEnded(e.ItemID)
	case *realtime.ResponseDone:
		b.respActive = false
		b.cancelAt = time.Time{}
		b.armIdle()
	case *realtime.ResponseOutputAudioTranscriptDone:
		if e.Transcript != "" {
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: e.Transcript})
			b.remember(realtime.Item{Type: realtime.ItemMessage, Role: realtime.RoleAssistant,
				Content: []realtime.ContentPart{{Type: realtime.ContentOutputText, Text: e.Transcript}}})
		}
	case *realtime.InputAudioTranscriptionCompleted:
		b.providerTranscribed(e.ItemID)
		if e.Transcript != "" {
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "user", Text: e.Transcript})
			b.remember(realtime.UserText(e.Transcript))
		}
	case *realtime.InputAudioTranscriptionFailed:
		b.transcribeNow(e.ItemID)
	case *realtime.ResponseFunctionCallArgumentsDone:
		b.functionCall(ctx, s, e)
	case *realtime.ErrorEvent:
		b.rt.opts.Metrics.providerError(b.cfg.Settings.Engine, ProviderErrorEvent)
		b.log.Warn().Str("code", e.Error.Code).Str("type", e.Error.Type).Str("message", e.Error.Message).Msg("realtime error event")
	}
}

// remember keeps an item for re-seeding, bounded to the last 200.
func (b *bridge) remember(it realtime.Item) {
	b.histSeq++
	b.history = append(b.history, it)
	if len(b.history) > 200 {
		b.history = b.history[len(b.history)-200:]
	}
}

// bargeIn stops the playout within one frame, tells the model how much of
// its answer the caller heard, and cancels the response unless the
// provider does it itself within the grace.
func (b *bridge) bargeIn(ctx context.Context, s realtime.Session) {
	b.idleAt = time.Time{}
	b.keysSpeechStarted(ctx, s)
	item, ms := b.phone.Flush()
	if item != "" && b.assistant[item] {
		b.send(ctx, s, &realtime.ConversationItemTruncate{ItemID: item, ContentIndex: 0, AudioEndMs: ms})
		b.log.Debug().Str("item_id", item).Int("audio_end_ms", ms).Msg("barge-in: truncated")
	}
	if b.respActive {
		b.cancelAt = time.Now().Add(b.rt.opts.CancelGrace)
	}
}

func (b *bridge) send(ctx context.Context, s realtime.Session, ev realtime.Event) {
	if err := s.Send(ctx, ev); err != nil && !errors.Is(err, realtime.ErrClosed) {
		b.log.Warn().Err(err).Str("type", ev.EventType()).Msg("send to session")
	}
}

// armIdle starts the idle timer once the assistant has finished.
func (b *bridge) armIdle() {
	if d := b.cfg.Settings.IdleTimeoutMS; d > 0 && b.endReason == "" {
		b.idleAt = time.Now().Add(time.Duration(d) * time.Millisecond)
	}
}

// onTick checks the deadlines.
func (b *bridge) onTick(ctx context.Context, s realtime.Session, now time.Time) error {
	if !b.cancelAt.IsZero() && now.After(b.cancelAt) {
		b.cancelAt = time.Time{}
		if b.respActive {
			b.send(ctx, s, &realtime.ResponseCancel{})
		}
	}
	drained := !b.respActive && b.phone.Pending() == 0
	if b.endReason != "" && drained {
		return call.Hangup(b.endReason)
	}
	if t := b.transferTo; t != nil && !t.started && drained {
		b.transferStep(ctx, t)
	}
	if !b.idleAt.IsZero() && now.After(b.idleAt) {
		b.idleAt = time.Time{}
		if b.phone.Pending() == 0 {
			b.checkIn(ctx, s)
		}
	}
	if b.toolsBusy > 0 && now.Sub(b.toolStart) >= b.rt.opts.ComfortDelay && b.phone.Pending() < 2*tick {
		b.comfortNow(now)
	}
	b.keysTick(ctx, s, now)
	b.dispatchSTT(ctx, now)
	return nil
}

// comfortNow fills the wait of a slow tool: the comfort prompt once per
// busy spell (when it is rendered), then the soft tone pattern.
func (b *bridge) comfortNow(now time.Time) {
	if !b.comfortSaid {
		b.comfortSaid = true
		if pcm := b.comfortText.ready(); pcm != nil {
			b.phone.PlayPCM(comfortPromptItem, pcm)
			b.promptUntil = now.Add(b.phone.Pending())
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: b.comfortText.text})
			return
		}
	}
	b.phone.PlayPCM(comfortItem, b.comfortTone())
}

// busyStart counts a tool, keypad send or transfer in progress; the first
// one starts the comfort delay.
func (b *bridge) busyStart() {
	if b.toolsBusy == 0 {
		b.toolStart = time.Now()
		b.comfortSaid = false
	}
	b.toolsBusy++
}

// busyEnd ends one; once none is left the comfort tone stops (a comfort
// prompt being said is let finish).
func (b *bridge) busyEnd() {
	if b.toolsBusy > 0 {
		b.toolsBusy--
	}
	if b.toolsBusy == 0 && !b.respActive && !time.Now().Before(b.promptUntil) {
		b.phone.Flush() // the comfort tone
	}
}

// checkIn is the appliance's idle_timeout_ms: the caller stayed silent
// after the assistant finished, so a silent user turn goes in and the
// model is asked to check in.
func (b *bridge) checkIn(ctx context.Context, s realtime.Session) {
	secs := float64(b.cfg.Settings.IdleTimeoutMS) / 1000
	b.log.Info().Float64("idle_s", secs).Msg("caller silent: checking in")
	ev := &realtime.InputAudioBufferTimeoutTriggered{}
	if o := b.observer.Load(); o != nil {
		o.o.ServerEvent(ev)
	}
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: realtime.TypeInputAudioBufferTimeoutTriggered})
	b.send(ctx, s, &realtime.ConversationItemCreate{Item: realtime.UserText(
		fmt.Sprintf("(The caller has said nothing for %.0f seconds. Check in briefly.)", secs))})
	b.send(ctx, s, &realtime.ResponseCreate{})
}

// greet speaks the agent's greeting right after answer: rendered locally
// when a Greeter is set (no wait for the model), else by the model.
func (b *bridge) greet(ctx context.Context, s realtime.Session) {
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
			b.send(ctx, s, &realtime.ConversationItemCreate{Item: item})
			b.remember(item)
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: text})
			return
		}
		b.log.Warn().Err(err).Msg("greeting not rendered locally; the model says it")
	}
	instr := text
	if b.cfg.Settings.Engine != agent.EngineEcho {
		instr = "Greet the caller by saying exactly this, and nothing else: " + text
	}
	b.send(ctx, s, &realtime.ResponseCreate{Response: &realtime.ResponseParams{Instructions: instr}})
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
