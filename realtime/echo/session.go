package echo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/realtime"
	"switchboard/realtime/internal/sendq"
)

// input is one entry of the session's inbound queue: audio or an event.
type input struct {
	audio []byte
	ev    realtime.Event
}

// item is a conversation item as the echo session keeps it.
type item struct {
	it      realtime.Item
	audio   []byte // user audio, in a store format (storeFormatOf)
	audioFm format
	spokeMs int // user audio: how long the caller spoke
	// An assistant item keeps no audio (its answer is read from the user
	// item it repeats): said means it spoke, and may be truncated up to
	// saidMs, the audio sent so far.
	said   bool
	saidMs int
	// voiced: the item had audio (kept or since forgotten).
	voiced bool
}

// response is the response in progress.
type response struct {
	id, itemID string
	prevItemID string
	text       bool   // output_modalities ["text"]
	audio      []byte // what it says, in audioFm (a user item's, or synthesized)
	audioFm    format
	sent       int // bytes of audio sent
	transcript string
	started    time.Time
	chunks     int
}

// session is an in-process realtime session. One goroutine (run) owns all
// state below the mutex-free line; Send and AppendAudio only queue.
type session struct {
	e      *Engine
	log    zerolog.Logger
	tag    string
	q      *sendq.Queue[input]
	events chan realtime.Event
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	once   sync.Once

	audioIn, eventsIn, eventsOut atomic.Uint64

	// Owned by run.
	seq     int
	convID  string
	cfg     realtime.SessionConfig
	in, out format
	// st is how the input is kept in buf and items (storeFormatOf(in));
	// inConv turns each appended frame into it, outConv a response's
	// audio into the output format, chunk by chunk.
	st        format
	inConv    *converter
	outConv   *converter
	vad       *vad
	vadOn     bool
	vadEvs    []vadEvent
	scratch   []int16
	carry     []byte
	buf       []byte
	bufStart  int64 // input sample position of buf[0]
	pos       int64 // samples received
	turnID    string
	onset     int64 // first voiced sample of the current turn
	turnStart int64 // onset minus prefix padding
	items     []*item
	resp      *response
	timer     *time.Timer
	// idle is the idle_timeout_ms timer (idle.go), armed (idleOn) once a
	// response completed, at input position idleFrom.
	idle     *time.Timer
	idleOn   bool
	idleFrom int64
	// free holds appended frames' buffers for the next appends.
	free chan []byte
}

// newSession starts a session whose configuration is the engine's
// defaults with cfg applied, so its session.created reports the session in
// force (the requested or stored model, voice, formats, turn detection).
func newSession(e *Engine, n uint64, cfg realtime.SessionConfig) (*session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("echo: %w", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &session{
		e:      e,
		tag:    fmt.Sprint(n),
		log:    e.opts.Logger.With().Str("realtime_engine", "echo").Logger(),
		q:      sendq.New[input](e.opts.AudioQueue, 64),
		events: make(chan realtime.Event, e.opts.EventBuffer),
		ctx:    ctx,
		cancel: cancel,
		timer:  time.NewTimer(time.Hour),
		idle:   time.NewTimer(time.Hour),
		free:   make(chan []byte, 4),
	}
	s.timer.Stop()
	s.idle.Stop()
	s.cfg = e.defaultConfig(s.id("sess"))
	s.applyFormats()
	if !cfg.IsZero() {
		s.apply(cfg)
	}
	s.wg.Add(1)
	go s.run()
	return s, nil
}

func (s *session) id(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s_%s_%d", prefix, s.tag, s.seq)
}

// --- realtime.Session ---

func (s *session) Send(ctx context.Context, e realtime.Event) error {
	if s.ctx.Err() != nil {
		return realtime.ErrClosed
	}
	if err := s.q.Push(ctx, input{ev: e}); err != nil {
		if errors.Is(err, sendq.ErrClosed) {
			return realtime.ErrClosed
		}
		return err
	}
	s.eventsIn.Add(1)
	return nil
}

func (s *session) AppendAudio(audio []byte) error {
	if s.ctx.Err() != nil {
		s.q.PushAudio(input{})
		return realtime.ErrClosed
	}
	var buf []byte
	select {
	case buf = <-s.free:
	default:
	}
	s.q.PushAudio(input{audio: append(buf[:0], audio...)})
	s.audioIn.Add(1)
	return nil
}

func (s *session) Events() <-chan realtime.Event { return s.events }
func (s *session) Done() <-chan struct{}         { return s.ctx.Done() }
func (s *session) Err() error                    { return context.Cause(s.ctx) }

func (s *session) Stats() realtime.Stats {
	return realtime.Stats{AudioSent: s.audioIn.Load(), AudioDropped: s.q.Dropped(), EventsSent: s.eventsIn.Load(), EventsReceived: s.eventsOut.Load()}
}

func (s *session) Close() error {
	s.once.Do(func() {
		s.cancel(realtime.ErrClosed)
		s.q.Close()
		s.wg.Wait()
	})
	return nil
}

// --- the run loop ---

func (s *session) run() {
	defer s.wg.Done()
	defer close(s.events)
	defer s.timer.Stop()
	defer s.idle.Stop()
	s.emit(&realtime.SessionCreated{Session: s.cfg.Clone()})
	s.convID = s.id("conv")
	s.emit(&realtime.ConversationCreated{Conversation: realtime.Conversation{ID: s.convID, Object: "realtime.conversation"}})
	var batch []input
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.q.Ready():
			batch = s.q.Drain(batch[:0])
			for i, in := range batch {
				if in.ev != nil {
					s.handle(in.ev)
				} else if in.audio != nil {
					s.onAudio(in.audio)
					select { // converted: the buffer serves a later append
					case s.free <- in.audio[:0]:
					default:
					}
				}
				batch[i] = input{}
			}
		case <-s.timer.C:
			s.stream()
		case <-s.idle.C:
			s.idleFired()
		}
	}
}

// emit fills the event_id and delivers e, waiting for the consumer.
func (s *session) emit(e realtime.Event) {
	realtime.SetEventID(e, s.id("event"))
	select {
	case s.events <- e:
		s.eventsOut.Add(1)
	case <-s.ctx.Done():
	}
}

func (s *session) fail(ev realtime.Event, code, param, format string, args ...any) {
	evID := ""
	if ev != nil {
		evID = realtime.EventID(ev)
	}
	s.emit(&realtime.ErrorEvent{Error: realtime.ErrorDetail{
		Type: realtime.ErrorInvalidRequest, Code: code, Param: param, EventID: evID,
		Message: fmt.Sprintf(format, args...),
	}})
}

func (s *session) handle(ev realtime.Event) {
	if _, ok := ev.(*realtime.SessionUpdate); !ok {
		s.disarmIdle() // the client moved the conversation on
	}
	switch v := ev.(type) {
	case *realtime.SessionUpdate:
		s.sessionUpdate(v)
	case *realtime.InputAudioBufferAppend:
		s.onAudio(v.Audio)
	case *realtime.InputAudioBufferCommit:
		s.commitManual(v)
	case *realtime.InputAudioBufferClear:
		s.buf, s.bufStart, s.carry, s.turnID = nil, s.pos, nil, ""
		s.vad.reset()
		s.emit(&realtime.InputAudioBufferCleared{})
	case *realtime.ConversationItemCreate:
		s.itemCreate(v)
	case *realtime.ConversationItemDelete:
		if i := s.find(v.ItemID); i < 0 {
			s.fail(v, "item_not_found", "item_id", "item %q does not exist", v.ItemID)
		} else {
			s.items = append(s.items[:i], s.items[i+1:]...)
			s.emit(&realtime.ConversationItemDeleted{ItemID: v.ItemID})
		}
	case *realtime.ConversationItemRetrieve:
		if i := s.find(v.ItemID); i < 0 {
			s.fail(v, "item_not_found", "item_id", "item %q does not exist", v.ItemID)
		} else {
			s.emit(&realtime.ConversationItemRetrieved{Item: s.items[i].it})
		}
	case *realtime.ConversationItemTruncate:
		s.truncate(v)
	case *realtime.ResponseCreate:
		s.responseCreate(v)
	case *realtime.ResponseCancel:
		if s.resp == nil || (v.ResponseID != "" && v.ResponseID != s.resp.id) {
			s.fail(v, "response_cancel_not_active", "response_id", "there is no response in progress to cancel")
			return
		}
		s.finish(realtime.StatusCancelled, realtime.ReasonClientCancelled)
	default:
		s.fail(ev, "unknown_event", "type", "the echo engine does not accept client events of type %q", ev.EventType())
	}
}

// --- session configuration ---

func (s *session) applyFormats() {
	in, out := formatOf(s.cfg.InputFormat()), formatOf(s.cfg.OutputFormat())
	if in != s.in {
		s.buf, s.carry, s.bufStart, s.pos = nil, nil, 0, 0
		s.st = storeFormatOf(in)
		s.inConv = newConverter(in, s.st)
	}
	s.in, s.out = in, out
	td := s.cfg.TurnDetection()
	s.vadOn = td != nil
	cfg := vadConfig{thresholdDBFS: thresholdDBFS(s.e.opts.Threshold), silenceMs: 500, prefixMs: 300, minSpeechMs: int(s.e.opts.MinSpeech / time.Millisecond)}
	if td != nil {
		if td.Threshold != nil {
			cfg.thresholdDBFS = thresholdDBFS(*td.Threshold)
		}
		if td.SilenceDurationMs != nil {
			cfg.silenceMs = *td.SilenceDurationMs
		}
		if td.PrefixPaddingMs != nil {
			cfg.prefixMs = *td.PrefixPaddingMs
		}
	}
	if s.vad == nil || s.vad.rate != in.rate {
		s.vad = newVAD(cfg, in.rate)
		s.vad.pos, s.vad.floor = s.pos, s.pos
	} else {
		s.vad.cfg = cfg
	}
}

func (s *session) sessionUpdate(v *realtime.SessionUpdate) {
	if err := v.Session.Validate(); err != nil {
		var ce *realtime.ConfigError
		if errors.As(err, &ce) {
			s.fail(v, "invalid_value", ce.Param, "%s", ce.Message)
		} else {
			s.fail(v, "invalid_value", "session", "%v", err)
		}
		return
	}
	s.apply(v.Session)
	s.emit(&realtime.SessionUpdated{Session: s.cfg.Clone()})
}

// apply merges a validated update into the session's configuration.
func (s *session) apply(u realtime.SessionConfig) {
	s.cfg.Merge(u)
	if td := s.cfg.Audio.Input.TurnDetection; td.Value != nil {
		s.cfg.Audio.Input.TurnDetection = realtime.Some(s.e.fillVAD(*td.Value))
	}
	s.applyFormats()
}

// keptAudioItems is how many of the newest items keep their audio (a user
// item) or may be truncated (an answer). Older items keep their place in the
// conversation but not their audio, so a long call's memory stays bounded
// (the caller cannot barge into, truncate or replay an answer that old
// anyway). Besides the count, the user items keep at most MaxTurn of audio
// in all (the newest first); answers keep none (they repeat a user item).
const keptAudioItems = 8

// forgetAudio drops the audio of items older than the newest keptAudioItems,
// and of older ones past the audio budget.
func (s *session) forgetAudio() {
	budget := s.e.opts.MaxTurn
	for i, n := len(s.items)-1, 0; i >= 0; i-- {
		it := s.items[i]
		if !it.voiced {
			continue
		}
		n++
		var d time.Duration
		if it.audio != nil {
			d = time.Duration(it.audioFm.ms(len(it.audio))) * time.Millisecond
		}
		if n > keptAudioItems || d > budget {
			it.audio, it.said = nil, false
			continue
		}
		budget -= d
	}
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// commit turns input samples [from, to) into a user audio item.
func (s *session) commit(itemID string, from, to, speechEnd int64) {
	from = max(from, s.bufStart, to-s.turnLimit())
	audio := append([]byte(nil), s.buf[s.off(from):s.off(to)]...)
	s.advance(to-s.bufStart, false)
	// What is left is a moment of the next turn: let the turn's array go
	// (the item has its copy), so a session between turns holds its items
	// and a small buffer, not both at their largest.
	if size := max(2*len(s.buf), 4096); cap(s.buf) > 2*size {
		s.buf = append(make([]byte, 0, size), s.buf...)
	}
	prev := s.lastID()
	s.emit(&realtime.InputAudioBufferCommitted{PreviousItemID: prev, ItemID: itemID})
	it := realtime.Item{ID: itemID, Object: "realtime.item", Type: realtime.ItemMessage, Status: realtime.StatusCompleted, Role: realtime.RoleUser,
		Content: []realtime.ContentPart{{Type: realtime.ContentInputAudio}}}
	s.items = append(s.items, &item{it: it, audio: audio, audioFm: s.st, voiced: true, spokeMs: s.ms(speechEnd - s.onsetOr(from))})
	s.forgetAudio()
	s.emit(&realtime.ConversationItemAdded{PreviousItemID: prev, Item: it})
	s.emit(&realtime.ConversationItemDone{PreviousItemID: prev, Item: it})
	if tr := s.cfg.Audio.Input.Transcription; tr.Value != nil {
		spoke := float64(s.ms(speechEnd-from)) / 1000
		s.emit(&realtime.InputAudioTranscriptionCompleted{ItemID: itemID, Transcript: fmt.Sprintf("(echo) %.1f seconds of speech", spoke)})
	}
}

func (s *session) commitManual(v *realtime.InputAudioBufferCommit) {
	if s.vadOn {
		s.fail(v, "invalid_value", "type", "input_audio_buffer.commit is only accepted when turn_detection is null")
		return
	}
	if s.ms(s.pos-s.bufStart) < 100 {
		s.fail(v, "input_audio_buffer_commit_empty", "", "buffer too small: at least 100ms of audio is needed, got %dms", s.ms(s.pos-s.bufStart))
		return
	}
	s.onset = s.bufStart
	s.commit(s.id("item"), s.bufStart, s.pos, s.pos)
}

// onsetOr returns the VAD onset of the current turn (without prefix
// padding) when it lies after from.
func (s *session) onsetOr(from int64) int64 { return max(s.onset, from) }

// --- conversation items ---

func (s *session) find(id string) int {
	for i, it := range s.items {
		if it.it.ID == id {
			return i
		}
	}
	return -1
}

func (s *session) lastID() string {
	if len(s.items) == 0 {
		return ""
	}
	return s.items[len(s.items)-1].it.ID
}

func (s *session) itemCreate(v *realtime.ConversationItemCreate) {
	it := v.Item
	switch it.Type {
	case realtime.ItemMessage:
		if it.Role != realtime.RoleUser && it.Role != realtime.RoleAssistant && it.Role != realtime.RoleSystem {
			s.fail(v, "invalid_value", "item.role", "message role %q is not user, assistant or system", it.Role)
			return
		}
	case realtime.ItemFunctionCall, realtime.ItemFunctionCallOutput:
		if it.CallID == "" && it.Type == realtime.ItemFunctionCallOutput {
			s.fail(v, "missing_required_parameter", "item.call_id", "function_call_output needs a call_id")
			return
		}
	default:
		s.fail(v, "invalid_value", "item.type", "item type %q is not supported by the echo engine", it.Type)
		return
	}
	if it.ID == "" {
		it.ID = s.id("item")
	} else if s.find(it.ID) >= 0 {
		s.fail(v, "item_already_exists", "item.id", "item %q already exists", it.ID)
		return
	}
	at := len(s.items)
	prev := s.lastID()
	switch v.PreviousItemID {
	case "":
	case "root":
		at, prev = 0, ""
	default:
		i := s.find(v.PreviousItemID)
		if i < 0 {
			s.fail(v, "item_not_found", "previous_item_id", "previous item %q does not exist", v.PreviousItemID)
			return
		}
		at, prev = i+1, v.PreviousItemID
	}
	it.Object, it.Status = "realtime.item", realtime.StatusCompleted
	ni := &item{it: it}
	for _, c := range it.Content {
		if c.Type == realtime.ContentInputAudio && len(c.Audio) > 0 {
			st := storeFormatOf(s.in)
			n := len(c.Audio) / s.in.bytesPerSample() * s.in.bytesPerSample()
			ni.audio, ni.audioFm, ni.voiced = newConverter(s.in, st).convert(ni.audio, c.Audio[:n]), st, true
		}
	}
	s.items = append(s.items[:at], append([]*item{ni}, s.items[at:]...)...)
	added := it
	added.Content = nil
	for _, c := range it.Content {
		c.Audio = nil // the server never echoes audio bytes back
		added.Content = append(added.Content, c)
	}
	s.emit(&realtime.ConversationItemAdded{PreviousItemID: prev, Item: added})
	s.emit(&realtime.ConversationItemDone{PreviousItemID: prev, Item: added})
}

func (s *session) truncate(v *realtime.ConversationItemTruncate) {
	i := s.find(v.ItemID)
	if i < 0 {
		s.fail(v, "item_not_found", "item_id", "item %q does not exist", v.ItemID)
		return
	}
	it := s.items[i]
	if it.it.Role != realtime.RoleAssistant || !it.said {
		s.fail(v, "invalid_value", "item_id", "only assistant message items with audio can be truncated")
		return
	}
	if v.ContentIndex != 0 {
		s.fail(v, "invalid_value", "content_index", "content_index must be 0")
		return
	}
	have := it.saidMs
	if v.AudioEndMs < 0 || v.AudioEndMs > have {
		s.fail(v, "invalid_value", "audio_end_ms", "audio_end_ms %d is beyond the item's audio (%d ms)", v.AudioEndMs, have)
		return
	}
	it.saidMs = v.AudioEndMs
	// Copy on write: earlier events share the old content slice. The
	// transcript may hold words that were never heard, so it goes.
	content := slices.Clone(it.it.Content)
	for j := range content {
		content[j].Transcript = ""
	}
	it.it.Content = content
	s.emit(&realtime.ConversationItemTruncated{ItemID: v.ItemID, ContentIndex: 0, AudioEndMs: v.AudioEndMs})
}
