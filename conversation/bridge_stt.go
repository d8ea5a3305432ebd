package conversation

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
)

// The STT fallback: when the provider gives no transcript of a caller's
// turn, the caller's audio of that turn goes to the Transcriber and its
// text becomes the turn's transcript in the call record. The audio is kept
// compact (turnAudio: G.711 at the caller's rate), a long turn is
// transcribed in pieces, and the audio waiting for the Transcriber and the
// Transcriber calls are bounded across all calls (sttBounds), so a call
// costs one piece of audio at most however long its caller speaks and
// however far the Transcriber is behind.
const (
	// turnPreRoll is kept before speech_started: a provider's VAD reports
	// the start of speech after it began.
	turnPreRoll = 500 * time.Millisecond
	// minTurnAudio is the shortest turn (or last piece) worth transcribing.
	minTurnAudio = 200 * time.Millisecond
	// maxTranscriptions bounds the Transcriber calls of one call at once.
	maxTranscriptions = 2
	// maxSTTPending bounds the turns waiting for a Transcriber call; past
	// it the oldest is dropped.
	maxSTTPending = 8
	// maxHeardItems bounds the memory of items the provider transcribed.
	maxHeardItems = 64
)

// sttBounds are the STT fallback's bounds shared by every call of a
// Runtime: a slot per Transcriber call in progress, and the bytes of
// caller audio waiting for one.
type sttBounds struct {
	slots   chan struct{}
	backlog atomic.Int64
	max     int64
	metrics *Metrics
}

// newSTTBounds allows transcriptions calls at once and backlog of
// telephone audio (8 kHz G.711) waiting.
func newSTTBounds(transcriptions int, backlog time.Duration, m *Metrics) *sttBounds {
	return &sttBounds{slots: make(chan struct{}, transcriptions), max: int64(media.ClockRate) * int64(backlog) / int64(time.Second), metrics: m}
}

// slot takes a Transcriber slot if one is free.
func (s *sttBounds) slot() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// free gives a slot back.
func (s *sttBounds) free() { <-s.slots }

// reserve counts n bytes of audio waiting for the Transcriber, unless the
// backlog would pass its bound.
func (s *sttBounds) reserve(n int) bool {
	if s.backlog.Add(int64(n)) > s.max {
		s.backlog.Add(-int64(n))
		return false
	}
	return true
}

// release uncounts n bytes (sent to the Transcriber, or dropped).
func (s *sttBounds) release(n int) { s.backlog.Add(-int64(n)) }

// sttFallback is the transcript of the caller's turns the provider did
// not transcribe (Run goroutine; nil without a Transcriber): each turn's
// audio (turnAudio, in pieces for a long turn) waits for the provider's
// transcript, for RuntimeOptions.TranscriptWait when the session
// transcribes, else not at all; then it goes to the Transcriber, at most
// maxTranscriptions of the call and the bounds' slots of all calls at
// once, in goroutines of their own, and its text becomes the caller's
// line in the record and in the history, in the turn's place.
type sttFallback struct {
	record call.Record
	spawn  spawnFunc
	log    zerolog.Logger
	hist   *history
	bounds *sttBounds
	// transcriber, wait, timeout and piece are RuntimeOptions'
	// Transcriber, TranscriptWait, TranscribeTimeout and TranscribePiece.
	transcriber Transcriber
	wait        time.Duration
	timeout     time.Duration
	piece       time.Duration

	// turns records the caller; adopt replaces it once the call's audio is
	// known (before the media goroutine calls audio).
	turns       *turnAudio
	transcribes bool   // the session has input transcription on
	item        string // the turn in progress (speech_started's item)
	pending     []sttTurn
	lostLogged  bool
	done        inflight[sttResult] // the transcriptions running
	heard       map[string]bool     // user items the provider transcribed
}

func newSTTFallback(tr Transcriber, f media.Format, bounds *sttBounds, rec call.Record, hist *history, spawn spawnFunc, log zerolog.Logger) *sttFallback {
	s := &sttFallback{transcriber: tr, record: rec, hist: hist, spawn: spawn, log: log, bounds: bounds,
		done: newInflight[sttResult](maxTranscriptions), heard: map[string]bool{}}
	s.adopt(f, 0)
	return s
}

// adopt records the conversation's audio in format f from a caller whose
// own audio has legRate (call.LegInfo.Rate; 0: unknown).
func (s *sttFallback) adopt(f media.Format, legRate int) {
	if s != nil {
		s.turns = newTurnAudio(f, legRate, s.piece)
	}
}

// sttTurn is a caller turn (or a piece of one) waiting for its transcript.
type sttTurn struct {
	item string
	g711 []byte    // µ-law or A-law at the recorder's rate
	at   time.Time // speech_stopped, or when the piece was cut
	due  time.Time // transcribe then unless the provider's transcript came
	seq  int       // history.seq at speech_stopped: where the text goes
	pcm  []byte    // PCM16LE at the recorder's rate, made when the turn is sent
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

// results is where finished transcriptions come back (nil: none ever).
func (s *sttFallback) results() <-chan sttResult {
	if s == nil {
		return nil
	}
	return s.done.wait()
}

// audio takes one frame of the caller's audio (the media goroutine).
func (s *sttFallback) audio(frame []byte) {
	if s != nil {
		s.turns.add(frame)
	}
}

// sessionConfig follows the session's transcription setting.
func (s *sttFallback) sessionConfig(c realtime.SessionConfig) {
	if s != nil {
		s.transcribes = hasTranscription(c)
	}
}

// speechStarted opens the caller's turn, item.
func (s *sttFallback) speechStarted(item string) {
	if s != nil {
		s.turns.start()
		s.item = item
	}
}

// turnEnded queues the rest of the turn that ended (its earlier pieces
// went as they were cut): transcribed at once when the session does not
// transcribe, else after the wait unless the provider's transcript comes
// first.
func (s *sttFallback) turnEnded(item string, now time.Time) {
	if s == nil {
		return
	}
	s.takePieces(now) // cut before the stop: they come first
	s.queue(item, s.turns.stop(), now)
	s.item = ""
}

// takePieces queues the pieces cut off the turn in progress (each tick).
func (s *sttFallback) takePieces(now time.Time) {
	pieces, lost := s.turns.takeCut()
	if lost > 0 {
		s.lost(lost, "the conversation was stalled")
	}
	for _, p := range pieces {
		s.queue(s.item, p, now)
	}
}

// queue queues one turn's (or piece's) audio for the Transcriber, within
// the shared backlog.
func (s *sttFallback) queue(item string, g711 []byte, now time.Time) {
	if s.turns.duration(g711) < minTurnAudio || s.heard[item] {
		return
	}
	if !s.bounds.reserve(cap(g711)) {
		s.lost(1, "the transcriber is behind")
		return
	}
	due := now
	if s.transcribes {
		due = now.Add(s.wait)
	}
	if len(s.pending) >= maxSTTPending {
		s.bounds.release(cap(s.pending[0].g711))
		s.pending = s.pending[1:]
		s.lost(1, "too many turns of this call wait")
	}
	s.pending = append(s.pending, sttTurn{item: item, g711: g711, at: now, due: due, seq: s.hist.seq})
}

// lost notes caller audio that will not be transcribed: logged once a call
// (it happens to every call at once when the Transcriber falls behind),
// counted always.
func (s *sttFallback) lost(n int, why string) {
	s.bounds.metrics.sttDropped(n)
	if !s.lostLogged {
		s.lostLogged = true
		s.log.Warn().Str("reason", why).Msg("stt fallback behind: caller speech is not transcribed")
	}
}

// drop gives back the backlog of the turns still waiting (the
// conversation ends).
func (s *sttFallback) drop() {
	if s == nil {
		return
	}
	for _, t := range s.pending {
		s.bounds.release(cap(t.g711))
	}
	s.pending = nil
}

// providerTranscribed records that the provider transcribed item: its
// turn needs no fallback.
func (s *sttFallback) providerTranscribed(item string) {
	if s == nil || item == "" {
		return
	}
	if len(s.heard) >= maxHeardItems {
		clear(s.heard)
	}
	s.heard[item] = true
	s.pending = slices.DeleteFunc(s.pending, func(t sttTurn) bool {
		if t.item == item {
			s.bounds.release(cap(t.g711))
			return true
		}
		return false
	})
}

// transcribeNow makes item's turn due at once (the provider's
// transcription failed).
func (s *sttFallback) transcribeNow(item string) {
	if s == nil {
		return
	}
	for i := range s.pending {
		if s.pending[i].item == item {
			s.pending[i].due = time.Time{}
		}
	}
}

// dispatch takes the pieces cut meanwhile and hands due turns to the
// Transcriber, at most maxTranscriptions of this call and the bounds'
// slots in all at once, each in its own goroutine; the others wait,
// compact, for a later tick.
func (s *sttFallback) dispatch(ctx context.Context, now time.Time) {
	if s == nil {
		return
	}
	s.takePieces(now)
	for len(s.pending) > 0 && s.done.running < maxTranscriptions && !now.Before(s.pending[0].due) {
		if !s.bounds.slot() {
			return
		}
		t := s.pending[0]
		s.pending = s.pending[1:]
		s.bounds.release(cap(t.g711))
		s.done.start()
		tr, rate, timeout, bounds := s.transcriber, s.turns.rate, s.timeout, s.bounds
		t.pcm = media.AppendPCM16LE(nil, s.turns.codec.DecodeFrame(nil, t.g711))
		t.g711 = nil
		s.spawn("transcription", func() {
			defer bounds.free()
			tctx, cancel := context.WithTimeout(ctx, timeout)
			text, err := tr.Transcribe(tctx, t.pcm, rate)
			cancel()
			t.pcm = nil
			select {
			case s.done.ch <- sttResult{turn: t, text: text, err: err}:
			case <-ctx.Done():
			}
		})
	}
}

// transcribed notes a fallback transcript as the caller's line (unless the
// provider's came meanwhile) and keeps it for re-seeding, in its place.
func (s *sttFallback) transcribed(r sttResult) {
	s.done.got()
	if r.err != nil {
		s.log.Warn().Err(r.err).Str("item_id", r.turn.item).Msg("stt fallback failed")
		return
	}
	text := strings.TrimSpace(r.text)
	if text == "" || s.heard[r.turn.item] {
		return
	}
	s.record.Note(call.Note{At: r.turn.at, Kind: call.NoteTranscript, Role: "user", Text: text, Data: map[string]string{"source": "stt"}})
	s.hist.insertAt(r.turn.seq, realtime.UserText(text))
}
