package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
)

// Fallback makes the conversation a stream hands its call to when the
// bot cannot be reached or leaves (package conversation makes an agent's,
// in the stream's format).
type Fallback interface {
	Conversation(ctx context.Context, f media.Format) (call.Conversation, error)
}

// Service makes the streams of an appliance's calls: one dialer (the
// address policy, TLS) and the metrics shared by all.
type Service struct {
	opts Options
	dial *dialer
}

// NewService returns the service of streams configured by o.
func NewService(o Options) *Service {
	o = o.withDefaults()
	return &Service{opts: o, dial: newDialer(o)}
}

// Stream is the conversation of a call with a bot over a media stream.
// The call uses it as any conversation: Prepare dials the bot while the
// caller hears ringing, Audio and Key carry the caller's side to it, Run
// waits for the end, Close sends stop and closes the socket.
type Stream struct {
	sv       *Service
	opts     Options
	phone    call.Phone
	trim     Trimmer
	target   call.StreamTarget
	format   media.Format
	fallback Fallback
	log      zerolog.Logger

	sid   string
	start time.Time
	w     wire
	conv  *converter
	out   chan outMsg
	wake  chan struct{}
	live  atomic.Bool
	wg    sync.WaitGroup

	done      chan struct{} // closed when the exchange with the bot is over
	endOnce   sync.Once
	cause     error // why it ended (set before done closes)
	wireOnce  sync.Once
	closeOnce sync.Once
	closing   atomic.Bool

	// next is the fallback conversation once the call was handed over.
	next   atomic.Pointer[convBox]
	opened atomic.Pointer[call.Opening]
	// failed is why the bot was unreachable when no fallback took the
	// call: the caller hears an error tone and the call ends.
	failed error

	// sent and dropped count the caller's frames (to the bot).
	sent, dropped atomic.Uint64

	// pending says the playback mirror has audio queued or a mark
	// waiting: the media goroutine's tick has work (frameTick).
	pending atomic.Bool

	mu      sync.Mutex // guards what follows, and the Speaker's queue as the stream mirrors it
	pb      *playback
	item    string
	clears  int
	marks   int
	played  []byte
	names   []string
	lost    time.Duration // the bot's audio dropped by MaxQueue
	refused map[string]int
}

type convBox struct{ c call.Conversation }

// Trimmer bounds the audio queued for the caller: Trim drops the oldest
// beyond max and reports how much it dropped (*call.Call is one). A
// stream needs it to hold a bot that floods it to streams.max_queue.
type Trimmer interface {
	Trim(max time.Duration) time.Duration
}

// errNoTrim refuses a phone that cannot bound its queue.
var errNoTrim = errors.New("stream: the call's phone cannot bound its queued audio (Trim)")

var _ call.Conversation = (*Stream)(nil)

// New returns the stream of the call on p to target, whose conversation
// takes and gives audio in f (the zero Format: µ-law, what a Twilio bot
// speaks). fallback, when set, takes the call when the bot is
// unreachable or leaves. p must be a Trimmer too (*call.Call is).
func (sv *Service) New(p call.Phone, target call.StreamTarget, f media.Format, fallback Fallback) *Stream {
	if f.IsZero() {
		f = media.FormatPCMU
	}
	if target.Protocol == "" {
		target.Protocol = ProtocolTwilio
	}
	if target.Track == "" {
		target.Track = TrackInbound
	}
	tr, _ := p.(Trimmer) // Connect refuses a phone without
	return &Stream{sv: sv, opts: sv.opts, phone: p, trim: tr, target: target, format: f, fallback: fallback,
		log:  p.Logger().With().Str("route", "stream").Str("stream_protocol", target.Protocol).Logger(),
		out:  make(chan outMsg, sv.opts.SendQueue),
		wake: make(chan struct{}, 1), done: make(chan struct{}), item: "stream-0", refused: map[string]int{}}
}

// Format is the call's audio with the stream.
func (s *Stream) Format() media.Format { return s.format }

// Keypad is the default: the bot gets every key as a dtmf message.
func (s *Stream) Keypad() call.KeypadSettings { return call.KeypadSettings{} }

// Recording is false: a streamed call is recorded when its number asks.
func (s *Stream) Recording() bool { return false }

// HearsFromAnswer is true: the bot hears a placed call's callee from the
// answer on, their "hello" too (call.HearsFromAnswer).
func (s *Stream) HearsFromAnswer() bool { return true }

// SID is the stream's id (streamSid), once Prepare has dialed.
func (s *Stream) SID() string { return s.sid }

// Prepare dials the bot (bounded by the connect timeout) and opens the
// stream (connected, start). A bot that cannot be reached hands the call
// to the fallback; without one, a call the appliance placed fails (503)
// and a caller hears an error tone before the call ends (Run).
func (s *Stream) Prepare(ctx context.Context) error {
	err := s.Connect(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	s.sv.opts.Metrics.connectFailed()
	s.log.Warn().Err(err).Msg("stream unavailable")
	s.phone.Note(call.Note{Kind: call.NoteEvent, Text: "stream unavailable: " + err.Error()})
	if s.fallback != nil {
		_, ferr := s.handover(ctx)
		if ferr == nil {
			return nil
		}
		s.log.Warn().Err(ferr).Msg("stream fallback unavailable")
	}
	if s.phone.Info().Direction == call.DirectionOutbound {
		return &call.RejectError{Status: 503, Reason: "Service Unavailable", Err: err}
	}
	s.failed = err
	s.phone.PlayPCM("stream-error", sitTone(s.phone.Format().Rate))
	return nil
}

// Connect dials the bot and opens the stream: Prepare without its
// fallback and its tone, for a call handed to a stream while it runs (its
// failure leaves the call as it was).
func (s *Stream) Connect(ctx context.Context) error {
	if s.trim == nil {
		return errNoTrim
	}
	s.sid = newSID()
	began := time.Now()
	var (
		w   wire
		err error
	)
	switch s.target.Protocol {
	case ProtocolTwilio:
		h, herr := upgradeHeaders(s.target.URL, s.sid, s.target.AuthToken, s.target.SigningSecret, time.Now())
		if herr != nil {
			return herr
		}
		conn, derr := s.sv.dial.websocket(ctx, s.target.URL, h)
		if derr != nil {
			return derr
		}
		tracks := []string{trackInbound}
		if s.target.Track == TrackBoth {
			tracks = append(tracks, trackOutbound)
		}
		route := s.phone.Route()
		w = newTwilioWire(conn, startInfo{streamSid: s.sid, accountSid: route.TeamID, callSid: s.phone.ID(),
			tracks: tracks, parameters: s.target.Parameters}, s.opts)
	case ProtocolAudioSocket:
		conn, derr := s.sv.dial.tcp(ctx, s.target.URL)
		if derr != nil {
			return derr
		}
		if w, err = newAudioSocketWire(conn, s.phone.ID(), s.opts); err != nil {
			conn.Close()
			return err
		}
	default:
		return fmt.Errorf("stream: protocol %q", s.target.Protocol)
	}
	if s.conv, err = newConverter(s.format, w.format()); err != nil {
		w.close("")
		return err
	}
	s.pb = newPlayback(w.format().BytesPerSecond(), s.target.Track == TrackBoth)
	s.w = w
	s.start = time.Now()
	if err := w.hello(); err != nil {
		w.close("")
		return fmt.Errorf("%w: open the stream: %s", ErrUnreachable, scrub(err))
	}
	s.sv.opts.Metrics.connected(time.Since(began))
	s.log = s.log.With().Str("stream_sid", s.sid).Logger()
	s.log.Info().Dur("connect", time.Since(began)).Msg("stream open")
	s.phone.Note(call.Note{Kind: call.NoteEvent, Text: "stream open", Data: map[string]any{"stream_sid": s.sid,
		"protocol": s.target.Protocol, "track": s.target.Track}})
	s.wg.Add(2)
	go s.writer()
	go s.reader()
	s.live.Store(true)
	return nil
}

// Audio sends the caller's frame to the bot (media goroutine: it never
// blocks; a frame the bot is too slow to take is dropped and counted),
// then brings the playback mirror up to date with what the pacer sent
// unless the reader holds it (frameTick: it never waits).
func (s *Stream) Audio(b []byte) {
	if n := s.next.Load(); n != nil {
		n.c.Audio(b)
		return
	}
	if !s.live.Load() {
		return
	}
	at := time.Since(s.start).Milliseconds()
	s.media(trackInbound, at, s.conv.toWire(b))
	s.frameTick(at)
}

// Key sends the caller's key to the bot.
func (s *Stream) Key(ev dtmf.Event) {
	if n := s.next.Load(); n != nil {
		n.c.Key(ev)
		return
	}
	if s.live.Load() {
		s.control(outMsg{kind: outDTMF, digit: ev.Digit})
	}
}

// Progress passes a placed call's progress to the fallback, if it took the
// call; the bot hears of the call only through its stream.
func (s *Stream) Progress(p call.Progress) {
	if n := s.next.Load(); n != nil {
		n.c.Progress(p)
	}
}

// Opened is kept for the fallback, which may take the call later.
func (s *Stream) Opened(o call.Opening) {
	s.opened.Store(&o)
	if n := s.next.Load(); n != nil {
		n.c.Opened(o)
	}
}

// Run waits for the call's end or the bot's, and answers the marks whose
// audio the pacer sent while the caller's audio does not tick the stream
// (a caller on hold). When the bot leaves, the fallback takes the call;
// without one the call ends with the reason.
func (s *Stream) Run(ctx context.Context) error {
	defer s.contain("run")
	if n := s.next.Load(); n != nil {
		return n.c.Run(ctx)
	}
	if s.failed != nil {
		return s.endWithTone(ctx)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return s.botGone(ctx)
		case <-s.wake:
		case <-timer.C:
			s.tick(time.Since(s.start).Milliseconds())
		}
		if w := s.waiting(); w > 0 {
			timer.Reset(max(w, markRecheck))
		}
	}
}

// markRecheck is the least wait before the run loop looks at the marks
// again: the pacer sends a frame each 20 ms, so the audio before a mark
// has left at most a frame after it was due.
const markRecheck = 5 * time.Millisecond

// waiting is how much audio stands before the first mark.
func (s *Stream) waiting() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pb.waiting()
}

// botGone hands the call to the fallback once the bot left, or ends it.
func (s *Stream) botGone(ctx context.Context) error {
	cause := s.cause
	s.log.Info().Err(cause).Msg("stream ended by the bot's side")
	s.phone.Note(call.Note{Kind: call.NoteEvent, Text: "stream ended: " + cause.Error()})
	if s.fallback != nil && ctx.Err() == nil {
		conv, err := s.handover(ctx)
		if err == nil {
			return conv.Run(ctx)
		}
		s.log.Warn().Err(err).Msg("stream fallback unavailable")
	}
	return call.Hangup(hangupReason(cause))
}

// hangupReason is the BYE's Reason for a stream that ended.
func hangupReason(cause error) string {
	var ce *closedError
	if errors.As(cause, &ce) {
		return "stream closed by the bot"
	}
	return "stream failed"
}

// handover hands the call to the fallback conversation: prepared (its
// model session opened), then given the caller's audio and keys.
func (s *Stream) handover(ctx context.Context) (call.Conversation, error) {
	conv, err := s.fallback.Conversation(ctx, s.format)
	if err != nil {
		return nil, err
	}
	if err := conv.Prepare(ctx); err != nil {
		conv.Close()
		return nil, err
	}
	if o := s.opened.Load(); o != nil {
		conv.Opened(*o)
	}
	s.next.Store(&convBox{conv})
	s.sv.opts.Metrics.countFallback()
	s.phone.Note(call.Note{Kind: call.NoteEvent, Text: "stream fallback: the call goes to the fallback agent"})
	s.log.Info().Msg("stream fallback: the call goes to the fallback agent")
	return conv, nil
}

// endWithTone lets the error tone play, then ends the call.
func (s *Stream) endWithTone(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(maxTone)
	for s.phone.Pending() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return call.Hangup("stream unavailable")
}

// maxTone bounds the wait for the error tone (1.2 s) to be heard.
const maxTone = 5 * time.Second

// Close ends the stream: stop goes to the bot (after what is queued), then
// the socket closes; a fallback conversation closes too. It waits for the
// stream's goroutines and notes its figures in the call record.
func (s *Stream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if n := s.next.Load(); n != nil {
			err = n.c.Close()
		}
		if s.w == nil {
			return
		}
		s.live.Store(false)
		s.closing.Store(true)
		t := time.NewTimer(s.opts.WriteTimeout)
		select {
		case s.out <- outMsg{kind: outStop}:
		case <-s.done:
		case <-t.C:
			s.end(errors.New("stop not sent: the bot is not reading"))
		}
		t.Stop()
		s.wg.Wait()
		s.noteEnd()
	})
	return err
}

// noteEnd writes the stream's figures into the call record.
func (s *Stream) noteEnd() {
	s.mu.Lock()
	refused := make(map[string]int, len(s.refused))
	for k, v := range s.refused {
		refused[k] = v
	}
	lost, marks, clears := s.lost, s.marks, s.clears
	s.mu.Unlock()
	d := map[string]any{"stream_sid": s.sid, "frames_sent": s.sent.Load(), "frames_dropped": s.dropped.Load(),
		"audio_dropped_ms": lost.Milliseconds(), "marks": marks, "clears": clears, "refused": refused}
	text := "stream closed"
	if s.cause != nil {
		text += ": " + s.cause.Error()
	}
	s.phone.Note(call.Note{Kind: call.NoteEvent, Text: text, Data: d})
	s.sv.opts.Metrics.closed()
}

// contain turns a panic of the stream's code into the end of the call.
func (s *Stream) contain(where string) {
	if v := recover(); v != nil {
		s.log.Error().Interface("panic", v).Str("where", where).Str("stack", string(debug.Stack())).Msg("stream code panicked: ending this call")
		s.phone.Hangup("internal error")
	}
}

// newSID returns a stream id in Twilio's form: MZ and 32 hex digits.
func newSID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "MZ" + hex.EncodeToString(b[:])
}
