package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/realtime"
)

// DefaultApology is said by the fallback when the agent sets none.
const DefaultApology = "Sorry, our assistant is not available right now. Please try again later."

// bridge is the conversation of one call with an agent: it joins the
// phone (call.Phone) and the model session (realtime.Session). Prepare
// opens and configures the session while the caller hears ringing; Run
// owns everything after answer in one goroutine.
type bridge struct {
	rt      *Runtime
	cfg     *Config
	log     zerolog.Logger
	sessCfg realtime.SessionConfig
	// cfgMu guards sessCfg, which a controller's session.update changes
	// from its own goroutine (controlled.go).
	cfgMu sync.Mutex
	// external leaves function calls to a controller (controlled.go).
	external bool

	// g711 is set when the session speaks G.711 (audio/pcmu or audio/pcma):
	// the call then runs at 8 kHz and the bytes are only re-coded.
	g711     *media.Codec
	g711In   []byte  // media goroutine only
	g711PCM  []int16 // media goroutine only
	g711Out  []byte  // Run goroutine only
	g711Dec  []int16 // Run goroutine only
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
	dtmfText    chan string
	reconnected time.Time // last reconnect: one per ReconnectWindow
	wg          sync.WaitGroup

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
	announced, started  bool
}

type toolResult struct {
	callID, name, output string
}

func newBridge(rt *Runtime, cfg *Config, log zerolog.Logger) *bridge {
	format := rt.format(cfg.Settings.Engine)
	b := &bridge{rt: rt, cfg: cfg, log: log, sessCfg: cfg.SessionConfig(format), assistant: map[string]bool{},
		toolDone: make(chan toolResult, 8), transferErr: make(chan error, 1), dtmfText: make(chan string, 16)}
	switch format {
	case realtime.FormatPCMU:
		b.g711 = &media.PCMU
	case realtime.FormatPCMA:
		b.g711 = &media.PCMA
	}
	if rt.opts.Transcriber != nil {
		b.turns = newTurnAudio(b.AudioRate())
		b.sttDone = make(chan sttResult, maxTranscriptions)
		b.heardItems = map[string]bool{}
	}
	return b
}

// AudioRate is 8000 when the session speaks G.711, else 24000.
func (b *bridge) AudioRate() int {
	if b.g711 != nil {
		return media.ClockRate
	}
	return 24000
}

func (b *bridge) session() realtime.Session {
	if v := b.sess.Load(); v != nil {
		return v.s
	}
	return nil
}

// Prepare opens the agent's session and waits until the engine confirmed
// its configuration (session.updated). When the engine cannot be reached,
// the agent's fallback decides: refuse the call (503) or answer and
// apologize.
func (b *bridge) Prepare(ctx context.Context) error {
	s, err := b.open(ctx)
	if err != nil {
		b.log.Warn().Err(err).Str("engine", b.cfg.Settings.Engine).Msg("realtime engine unavailable")
		if b.cfg.Settings.Fallback == FallbackApologize {
			b.failure = err
			return nil
		}
		return &call.RejectError{Status: 503, Reason: "Service Unavailable", Err: err}
	}
	b.sess.Store(&sessionBox{s})
	return nil
}

// open opens a session and waits for session.updated.
func (b *bridge) open(ctx context.Context) (realtime.Session, error) {
	eng, ok := b.rt.opts.Engines[b.cfg.Settings.Engine]
	if !ok || eng == nil {
		return nil, fmt.Errorf("engine %q is not configured", b.cfg.Settings.Engine)
	}
	s, err := eng.Open(ctx, b.config())
	if err != nil {
		return nil, fmt.Errorf("open %s session: %w", b.cfg.Settings.Engine, err)
	}
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				err := s.Err()
				s.Close()
				return nil, fmt.Errorf("session ended before it was configured: %w", err)
			}
			switch e := ev.(type) {
			case *realtime.SessionUpdated:
				b.transcribes = hasTranscription(e.Session)
				return s, nil
			case *realtime.ErrorEvent:
				b.log.Warn().Str("code", e.Error.Code).Str("message", e.Error.Message).Msg("session configuration error")
			}
		case <-ctx.Done():
			s.Close()
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
	if b.g711 != nil {
		b.g711PCM = media.DecodePCM16LE(b.g711PCM[:0], pcm)
		b.g711In = b.g711.EncodeFrame(b.g711In[:0], b.g711PCM)
		pcm = b.g711In
	}
	_ = s.AppendAudio(pcm)
}

// play queues a model audio delta, decoding G.711 to PCM16LE when the
// session speaks it.
func (b *bridge) play(itemID string, audio []byte) {
	if b.g711 != nil {
		b.g711Dec = b.g711.DecodeFrame(b.g711Dec[:0], audio)
		b.g711Out = b.g711Out[:0]
		for _, v := range b.g711Dec {
			b.g711Out = append(b.g711Out, byte(v), byte(uint16(v)>>8))
		}
		audio = b.g711Out
	}
	b.phone.Play(itemID, audio)
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
func (b *bridge) Run(ctx context.Context, phone call.Phone) error {
	b.phone = phone
	if b.failure != nil {
		return b.apologize(ctx, b.failure)
	}
	s := b.session()
	b.greet(ctx, s)
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
		case r := <-b.toolDone:
			b.toolFinished(ctx, s, r)
		case text := <-b.dtmfText:
			b.digits(ctx, s, text)
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

// handle reacts to one server event.
func (b *bridge) handle(ctx context.Context, s realtime.Session, ev realtime.Event) {
	switch e := ev.(type) {
	case *realtime.ResponseOutputAudioDelta:
		b.play(e.ItemID, e.Delta)
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
	b.phone.SpeechStarted()
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
	b.dispatchSTT(ctx, now)
	return nil
}

// comfortNow fills the wait of a slow tool: the comfort prompt once per
// busy spell (when it is rendered), then the soft tone pattern.
func (b *bridge) comfortNow(now time.Time) {
	if !b.comfortSaid {
		b.comfortSaid = true
		if pcm := b.comfortText.ready(); pcm != nil {
			b.phone.Play(comfortPromptItem, pcm)
			b.promptUntil = now.Add(b.phone.Pending())
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: b.comfortText.text})
			return
		}
	}
	b.phone.Play(comfortItem, b.comfortTone())
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
		pcm, err := g.Render(ctx, text, b.cfg.Settings.Voice, b.phone.Rate())
		if err == nil {
			b.phone.Play(greetingItem, pcm)
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
	if b.cfg.Settings.Engine != EngineEcho {
		instr = "Greet the caller by saying exactly this, and nothing else: " + text
	}
	b.send(ctx, s, &realtime.ResponseCreate{Response: &realtime.ResponseParams{Instructions: instr}})
}

var (
	_ call.DTMFHandler      = (*bridge)(nil)
	_ call.DTMFInbandSetter = (*bridge)(nil)
)

// DTMFPolicy is the agent's keypad policy (call.DTMFHandler).
func (b *bridge) DTMFPolicy() dtmf.Policy { return b.cfg.Settings.DTMF }

// DTMFInband is the agent's dtmf_inband (call.DTMFInbandSetter).
func (b *bridge) DTMFInband() call.Inband { return call.Inband(b.cfg.Settings.DTMFInband) }

// DTMFKey reports a key to the observer as
// input_audio_buffer.dtmf_event_received (call.DTMFHandler).
func (b *bridge) DTMFKey(ev dtmf.Event) {
	if o := b.observer.Load(); o != nil {
		n := ev.Notification()
		o.o.ServerEvent(&realtime.InputAudioBufferDTMFEventReceived{Event: n.Event, ReceivedAt: n.ReceivedAt})
	}
}

// DTMFText hands a flushed digit message to the Run goroutine
// (call.DTMFHandler); it never blocks the media path.
func (b *bridge) DTMFText(text string) {
	select {
	case b.dtmfText <- text:
	default:
		b.log.Warn().Msg("dtmf message dropped: the conversation is behind")
	}
}

// digits sends a flushed digit message to the model as a user turn. A
// response in progress is interrupted first, as the caller moved on.
func (b *bridge) digits(ctx context.Context, s realtime.Session, text string) {
	if b.respActive {
		item, ms := b.phone.Flush()
		if item != "" && b.assistant[item] {
			b.send(ctx, s, &realtime.ConversationItemTruncate{ItemID: item, AudioEndMs: ms})
		}
		b.send(ctx, s, &realtime.ResponseCancel{})
		b.respActive = false
	}
	b.idleAt = time.Time{}
	it := realtime.UserText(text)
	b.send(ctx, s, &realtime.ConversationItemCreate{Item: it})
	b.remember(it)
	b.send(ctx, s, &realtime.ResponseCreate{})
}

// Items the appliance plays itself (never truncated in the model).
const (
	greetingItem      = "greeting"
	comfortItem       = "comfort"
	comfortPromptItem = "comfort_prompt"
	announceItem      = "transfer_announcement"
	apologyItem       = "apology"
)

// reconnect opens a new session once after the old one failed, and seeds
// it with the conversation so far.
func (b *bridge) reconnect(ctx context.Context, old realtime.Session) (realtime.Session, error) {
	cause := old.Err()
	if !b.reconnected.IsZero() && time.Since(b.reconnected) < ReconnectWindow {
		old.Close()
		b.sess.Store(nil)
		return nil, fmt.Errorf("session lost again within %s of the last reconnect: %w", ReconnectWindow, cause)
	}
	b.reconnected = time.Now()
	b.log.Warn().Err(cause).Msg("realtime session lost mid-call: reconnecting once")
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "session lost: " + errText(cause)})
	old.Close()
	b.phone.Flush()
	b.respActive, b.cancelAt = false, time.Time{}
	rctx, cancel := context.WithTimeout(ctx, b.rt.opts.ReconnectTimeout)
	defer cancel()
	s, err := b.open(rctx)
	if err != nil {
		b.sess.Store(nil)
		return nil, fmt.Errorf("reconnect: %w (after %v)", err, cause)
	}
	for _, it := range b.history {
		b.send(ctx, s, &realtime.ConversationItemCreate{Item: it})
	}
	b.sess.Store(&sessionBox{s})
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: fmt.Sprintf("session reconnected, %d items re-seeded", len(b.history))})
	return s, nil
}

func errText(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

// apologize is the fallback once the model is unreachable: say the apology
// (or play a short tone without a Greeter), then transfer to the
// fallback URI or hang up. The caller never sits in silence.
func (b *bridge) apologize(ctx context.Context, cause error) error {
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "fallback: " + errText(cause)})
	text := b.cfg.Settings.apologyText()
	pcm, err := []byte(nil), errors.New("no greeter")
	if g := b.rt.opts.Greeter; g != nil {
		pcm, err = g.Render(ctx, text, b.cfg.Settings.Voice, b.phone.Rate())
	}
	if err != nil {
		pcm = tone(b.phone.Rate(), 440, 0.6, 0.1)
	}
	b.phone.Play(apologyItem, pcm)
	b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: text})
	deadline := time.Now().Add(30 * time.Second)
	for b.phone.Pending() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(tick):
		}
	}
	if uri := b.cfg.Settings.FallbackURI; uri != "" {
		b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: uri, Data: map[string]string{"reason": "fallback"}})
		if err := b.phone.Transfer(ctx, uri); err != nil {
			b.log.Warn().Err(err).Str("target_uri", uri).Msg("fallback transfer failed")
			return call.Hangup("assistant unavailable; transfer failed")
		}
		return call.Hangup("assistant unavailable; transferred")
	}
	return call.Hangup("assistant unavailable")
}

// functionCall runs a tool the model called.
func (b *bridge) functionCall(ctx context.Context, s realtime.Session, e *realtime.ResponseFunctionCallArgumentsDone) {
	b.phone.Note(call.Note{Kind: call.NoteToolCall, Text: e.Name, Data: map[string]string{"call_id": e.CallID, "arguments": e.Arguments}})
	if b.external {
		return // the controller runs its own tools
	}
	switch e.Name {
	case ToolEndCall:
		var args struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		reason := "agent ended the call"
		if args.Reason != "" {
			reason += ": " + args.Reason
		}
		b.endReason = reason
		b.idleAt = time.Time{}
		b.output(ctx, s, e.CallID, e.Name, `{"ok":true}`, false)
	case ToolSendDTMF:
		var args struct {
			Digits string `json:"digits"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			out := `{"ok":true}`
			if err := b.phone.SendDTMF(ctx, args.Digits); err != nil {
				out = errorJSON(err.Error())
			}
			select {
			case b.toolDone <- toolResult{callID: e.CallID, name: ToolSendDTMF, output: out}:
			case <-ctx.Done():
			}
		}()
		b.busyStart()
	case ToolTransferCall:
		var args struct {
			Target string `json:"target"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		for _, t := range b.cfg.Settings.TransferTargets {
			if t.Name == args.Target {
				b.transferTo = &pendingTransfer{callID: e.CallID, target: t.Name, uri: t.URI}
				b.idleAt = time.Time{}
				return
			}
		}
		b.output(ctx, s, e.CallID, e.Name, errorJSON("unknown transfer target "+args.Target), true)
	default:
		for _, t := range b.cfg.Settings.Tools {
			if t.Name == e.Name {
				b.runTool(ctx, t, e.CallID, e.Arguments)
				return
			}
		}
		b.output(ctx, s, e.CallID, e.Name, errorJSON("unknown tool "+e.Name), true)
	}
}

// runTool calls a custom tool in its own goroutine with its timeout; the
// result comes back on toolDone.
func (b *bridge) runTool(ctx context.Context, t Tool, callID, args string) {
	b.busyStart()
	timeout := time.Duration(t.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultToolTimeout * time.Millisecond
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var out string
		var err error
		if b.rt.opts.Tools == nil {
			err = errors.New("custom tools are not configured on this appliance")
		} else {
			out, err = b.rt.opts.Tools.CallTool(tctx, t, callID, args)
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("the tool did not answer within %s", timeout)
			}
			out = errorJSON(err.Error())
		}
		select {
		case b.toolDone <- toolResult{callID: callID, name: t.Name, output: out}:
		case <-ctx.Done():
		}
	}()
}

func (b *bridge) toolFinished(ctx context.Context, s realtime.Session, r toolResult) {
	b.busyEnd()
	b.output(ctx, s, r.callID, r.name, r.output, true)
}

// output returns a function's result to the model and, when respond is
// set, asks for the answer that uses it.
func (b *bridge) output(ctx context.Context, s realtime.Session, callID, name, out string, respond bool) {
	b.phone.Note(call.Note{Kind: call.NoteToolResult, Text: name, Data: map[string]string{"call_id": callID, "output": out}})
	b.send(ctx, s, &realtime.ConversationItemCreate{Item: realtime.FunctionCallOutput(callID, out)})
	if respond {
		b.send(ctx, s, &realtime.ResponseCreate{})
	}
}

// transferStep runs once the assistant finished its sentence: first the
// transfer announcement (from the cache), then, once it played out, the
// REFER.
func (b *bridge) transferStep(ctx context.Context, t *pendingTransfer) {
	if !t.announced {
		if b.announce != nil && !b.announce.settled() {
			return // still rendering (bounded by promptRenderTimeout)
		}
		t.announced = true
		if pcm := b.announce.ready(); pcm != nil {
			b.phone.Play(announceItem, pcm)
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: b.announce.text})
			return // the REFER follows once it played out
		}
	}
	t.started = true
	b.startTransfer(ctx, t)
}

// startTransfer sends the REFER once the assistant finished its sentence
// and the transfer announcement played out.
func (b *bridge) startTransfer(ctx context.Context, t *pendingTransfer) {
	b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: t.uri, Data: map[string]string{"target": t.target}})
	b.log.Info().Str("target_uri", t.uri).Msg("transferring the call")
	b.busyStart()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := b.phone.Transfer(ctx, t.uri)
		select {
		case b.transferErr <- err:
		case <-ctx.Done():
		}
	}()
}

// transferFailed keeps the call and tells the model.
func (b *bridge) transferFailed(ctx context.Context, s realtime.Session, err error) {
	t := b.transferTo
	b.transferTo = nil
	b.busyEnd()
	b.log.Warn().Err(err).Msg("transfer failed")
	b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: "failed: " + err.Error()})
	if t != nil {
		b.output(ctx, s, t.callID, ToolTransferCall, errorJSON("the transfer failed: "+err.Error()), true)
	}
}

func errorJSON(msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg}})
	return string(b)
}

// comfortTone is 200 ms of a soft 440 Hz tone with a gentle fade, then
// 800 ms of silence: what a caller hears while a tool runs.
func (b *bridge) comfortTone() []byte {
	if b.comfort == nil {
		rate := b.phone.Rate()
		b.comfort = append(tone(rate, 440, 0.2, 0.03), make([]byte, rate*2*8/10)...)
	}
	return b.comfort
}

// tone renders secs of a sine at freq and amplitude amp (0..1) as PCM16LE,
// with 10 ms fades.
func tone(rate int, freq, secs, amp float64) []byte {
	n := int(float64(rate) * secs)
	out := make([]byte, 2*n)
	fade := rate / 100
	for i := 0; i < n; i++ {
		g := amp
		if i < fade {
			g *= float64(i) / float64(fade)
		} else if n-i < fade {
			g *= float64(n-i) / float64(fade)
		}
		v := int16(g * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
		out[2*i], out[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	return out
}

// prompt is a sentence the appliance says itself during a call (comfort
// prompt, transfer announcement), rendered by the Greeter (from its cache)
// in the background so the Run goroutine never waits for TTS.
type prompt struct {
	text string
	pcm  atomic.Pointer[[]byte]
	done chan struct{} // closed once rendering ended, rendered or not
}

// ready is the rendered audio, nil while rendering or when it failed (and
// for a nil prompt).
func (p *prompt) ready() []byte {
	if p == nil {
		return nil
	}
	if v := p.pcm.Load(); v != nil {
		return *v
	}
	return nil
}

// settled reports whether rendering ended.
func (p *prompt) settled() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// promptRenderTimeout bounds the rendering of a call's prompts; a prompt
// not rendered by then is skipped (the comfort tone, the REFER go on).
const promptRenderTimeout = 5 * time.Second

// renderPrompts starts rendering the comfort prompt and, for an agent with
// transfer targets, the transfer announcement. Without a Greeter there are
// none: the comfort tone alone fills a wait, and the REFER goes at once.
func (b *bridge) renderPrompts(ctx context.Context) {
	g := b.rt.opts.Greeter
	if g == nil {
		return
	}
	st := &b.cfg.Settings
	var ps []*prompt
	if text := st.comfortText(); text != "" {
		b.comfortText = &prompt{text: text, done: make(chan struct{})}
		ps = append(ps, b.comfortText)
	}
	if text := st.announcementText(); text != "" && len(st.TransferTargets) > 0 {
		b.announce = &prompt{text: text, done: make(chan struct{})}
		ps = append(ps, b.announce)
	}
	if len(ps) == 0 {
		return
	}
	voice, rate := st.Voice, b.phone.Rate()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		rctx, cancel := context.WithTimeout(ctx, promptRenderTimeout)
		defer cancel()
		for _, p := range ps {
			pcm, err := g.Render(rctx, p.text, voice, rate)
			if err != nil {
				b.log.Warn().Err(err).Str("prompt", p.text).Msg("prompt not rendered")
			} else {
				p.pcm.Store(&pcm)
			}
			close(p.done)
		}
	}()
}

// The STT fallback: when the provider gives no transcript of a caller's
// turn, the caller's audio of that turn goes to the Transcriber and its
// text becomes the turn's transcript in the call record.
const (
	// maxTurnAudio bounds the audio kept of one turn (the rest is cut).
	maxTurnAudio = 60 * time.Second
	// turnPreRoll is kept before speech_started: a provider's VAD reports
	// the start of speech after it began.
	turnPreRoll = 500 * time.Millisecond
	// minTurnAudio is the shortest turn worth transcribing.
	minTurnAudio = 200 * time.Millisecond
	// maxTranscriptions bounds the Transcriber calls of one call at once.
	maxTranscriptions = 2
	// maxSTTPending bounds the turns waiting for a Transcriber call; past
	// it the oldest is dropped.
	maxSTTPending = 8
	// maxHeardItems bounds the memory of items the provider transcribed.
	maxHeardItems = 64
)

// turnAudio collects the caller's audio (PCM16LE at the conversation rate)
// from speech_started to speech_stopped. add runs on the media goroutine,
// start and stop on the Run goroutine.
type turnAudio struct {
	mu     sync.Mutex
	pre    []byte // the last turnPreRoll of audio while no turn is open
	preMax int
	on     bool
	buf    []byte
	max    int
}

func newTurnAudio(rate int) *turnAudio {
	bytesPer := func(d time.Duration) int { return 2 * int(int64(rate)*int64(d)/int64(time.Second)) }
	return &turnAudio{preMax: bytesPer(turnPreRoll), max: bytesPer(maxTurnAudio)}
}

// add takes one frame of the caller's audio; it never blocks for long.
func (t *turnAudio) add(pcm []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on {
		if room := t.max - len(t.buf); room > 0 {
			t.buf = append(t.buf, pcm[:min(len(pcm), room)]...)
		}
		return
	}
	t.pre = append(t.pre, pcm...)
	if n := len(t.pre) - t.preMax; n > 0 {
		t.pre = t.pre[n&^1:]
	}
}

// start opens a turn with the pre-roll (a turn already open goes on).
func (t *turnAudio) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on {
		return
	}
	t.on = true
	t.buf = append(make([]byte, 0, 2*len(t.pre)+t.preMax), t.pre...)
	t.pre = t.pre[:0]
}

// stop closes the turn and returns its audio (nil when none was open).
func (t *turnAudio) stop() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return nil
	}
	t.on = false
	pcm := t.buf
	t.buf = nil
	return pcm
}

// sttTurn is a caller turn waiting for its transcript.
type sttTurn struct {
	item string
	pcm  []byte
	at   time.Time // speech_stopped
	due  time.Time // transcribe then unless the provider's transcript came
	seq  int       // histSeq at speech_stopped: where the text goes in history
}

type sttResult struct {
	turn sttTurn
	text string
	err  error
}

// hasTranscription reports whether a session transcribes the caller.
func hasTranscription(c realtime.SessionConfig) bool {
	return c.Audio != nil && c.Audio.Input != nil && c.Audio.Input.Transcription.Value != nil
}

// turnEnded queues the audio of the turn that ended: transcribed at once
// when the session does not transcribe, else after TranscriptWait unless
// the provider's transcript comes first.
func (b *bridge) turnEnded(item string) {
	if b.turns == nil {
		return
	}
	pcm := b.turns.stop()
	if len(pcm) < 2*int(int64(b.AudioRate())*int64(minTurnAudio)/int64(time.Second)) || b.heardItems[item] {
		return
	}
	now := time.Now()
	due := now
	if b.transcribes {
		due = now.Add(b.rt.opts.TranscriptWait)
	}
	if len(b.sttPending) >= maxSTTPending {
		b.log.Warn().Str("item_id", b.sttPending[0].item).Msg("stt fallback behind: a caller turn is not transcribed")
		b.sttPending = b.sttPending[1:]
	}
	b.sttPending = append(b.sttPending, sttTurn{item: item, pcm: pcm, at: now, due: due, seq: b.histSeq})
}

// providerTranscribed records that the provider transcribed item: its
// turn needs no fallback.
func (b *bridge) providerTranscribed(item string) {
	if b.turns == nil || item == "" {
		return
	}
	if len(b.heardItems) >= maxHeardItems {
		clear(b.heardItems)
	}
	b.heardItems[item] = true
	for i, t := range b.sttPending {
		if t.item == item {
			b.sttPending = append(b.sttPending[:i], b.sttPending[i+1:]...)
			return
		}
	}
}

// transcribeNow makes item's turn due at once (the provider's
// transcription failed).
func (b *bridge) transcribeNow(item string) {
	for i := range b.sttPending {
		if b.sttPending[i].item == item {
			b.sttPending[i].due = time.Time{}
		}
	}
}

// dispatchSTT hands due turns to the Transcriber, at most
// maxTranscriptions at once, each in its own goroutine.
func (b *bridge) dispatchSTT(ctx context.Context, now time.Time) {
	for len(b.sttPending) > 0 && b.sttBusy < maxTranscriptions && !now.Before(b.sttPending[0].due) {
		t := b.sttPending[0]
		b.sttPending = b.sttPending[1:]
		b.sttBusy++
		tr, rate, timeout := b.rt.opts.Transcriber, b.AudioRate(), b.rt.opts.TranscribeTimeout
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			tctx, cancel := context.WithTimeout(ctx, timeout)
			text, err := tr.Transcribe(tctx, t.pcm, rate)
			cancel()
			t.pcm = nil
			select {
			case b.sttDone <- sttResult{turn: t, text: text, err: err}:
			case <-ctx.Done():
			}
		}()
	}
}

// transcribed notes a fallback transcript as the caller's line (unless the
// provider's came meanwhile) and keeps it for re-seeding, in its place.
func (b *bridge) transcribed(r sttResult) {
	b.sttBusy--
	if r.err != nil {
		b.log.Warn().Err(r.err).Str("item_id", r.turn.item).Msg("stt fallback failed")
		return
	}
	text := strings.TrimSpace(r.text)
	if text == "" || b.heardItems[r.turn.item] {
		return
	}
	b.phone.Note(call.Note{At: r.turn.at, Kind: call.NoteTranscript, Role: "user", Text: text, Data: map[string]string{"source": "stt"}})
	it := realtime.UserText(text)
	if i := r.turn.seq - (b.histSeq - len(b.history)); i >= 0 && i < len(b.history) {
		b.histSeq++
		b.history = append(b.history[:i], append([]realtime.Item{it}, b.history[i:]...)...)
		return
	}
	b.remember(it)
}
