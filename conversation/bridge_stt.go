package conversation

import (
	"context"
	"strings"
	"switchboard/media"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/realtime"
)

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

// turnAudio collects the caller's audio (in the conversation's format)
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

func newTurnAudio(f media.Format) *turnAudio {
	bytesPer := func(d time.Duration) int { return int(int64(f.BytesPerSecond()) * int64(d) / int64(time.Second)) }
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

// sttFallback is the transcript of the caller's turns the provider did
// not transcribe (Run goroutine; nil without a Transcriber): each turn's
// audio (turnAudio) waits for the provider's transcript, for
// RuntimeOptions.TranscriptWait when the session transcribes, else not at
// all; then it goes to the Transcriber, at most maxTranscriptions at once
// in goroutines of their own, and its text becomes the caller's line in
// the record and in the history, in the turn's place.
type sttFallback struct {
	record call.Record
	spawn  spawnFunc
	log    zerolog.Logger
	hist   *history
	format media.Format
	// transcriber, wait and timeout are RuntimeOptions' Transcriber,
	// TranscriptWait and TranscribeTimeout.
	transcriber Transcriber
	wait        time.Duration
	timeout     time.Duration

	turns       *turnAudio
	transcribes bool // the session has input transcription on
	pending     []sttTurn
	busy        int
	done        chan sttResult
	heard       map[string]bool // user items the provider transcribed
}

func newSTTFallback(tr Transcriber, f media.Format, rec call.Record, hist *history, spawn spawnFunc, log zerolog.Logger) *sttFallback {
	return &sttFallback{transcriber: tr, format: f, record: rec, hist: hist, spawn: spawn, log: log, turns: newTurnAudio(f),
		done: make(chan sttResult, maxTranscriptions), heard: map[string]bool{}}
}

// sttTurn is a caller turn waiting for its transcript.
type sttTurn struct {
	item string
	pcm  []byte
	at   time.Time // speech_stopped
	due  time.Time // transcribe then unless the provider's transcript came
	seq  int       // history.seq at speech_stopped: where the text goes
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
	return s.done
}

// audio takes one frame of the caller's audio (the media goroutine).
func (s *sttFallback) audio(pcm []byte) {
	if s != nil {
		s.turns.add(pcm)
	}
}

// sessionConfig follows the session's transcription setting.
func (s *sttFallback) sessionConfig(c realtime.SessionConfig) {
	if s != nil {
		s.transcribes = hasTranscription(c)
	}
}

// speechStarted opens the caller's turn.
func (s *sttFallback) speechStarted() {
	if s != nil {
		s.turns.start()
	}
}

// turnEnded queues the audio of the turn that ended: transcribed at once
// when the session does not transcribe, else after the wait unless the
// provider's transcript comes first.
func (s *sttFallback) turnEnded(item string, now time.Time) {
	if s == nil {
		return
	}
	pcm := s.turns.stop()
	if s.format.Duration(len(pcm)) < minTurnAudio || s.heard[item] {
		return
	}
	due := now
	if s.transcribes {
		due = now.Add(s.wait)
	}
	if len(s.pending) >= maxSTTPending {
		s.log.Warn().Str("item_id", s.pending[0].item).Msg("stt fallback behind: a caller turn is not transcribed")
		s.pending = s.pending[1:]
	}
	s.pending = append(s.pending, sttTurn{item: item, pcm: pcm, at: now, due: due, seq: s.hist.seq})
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
	for i, t := range s.pending {
		if t.item == item {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
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

// dispatch hands due turns to the Transcriber, at most
// maxTranscriptions at once, each in its own goroutine.
func (s *sttFallback) dispatch(ctx context.Context, now time.Time) {
	if s == nil {
		return
	}
	for len(s.pending) > 0 && s.busy < maxTranscriptions && !now.Before(s.pending[0].due) {
		t := s.pending[0]
		s.pending = s.pending[1:]
		s.busy++
		tr, rate, timeout := s.transcriber, s.format.Rate, s.timeout
		t.pcm = toPCM16(s.format, t.pcm)
		s.spawn("transcription", func() {
			tctx, cancel := context.WithTimeout(ctx, timeout)
			text, err := tr.Transcribe(tctx, t.pcm, rate)
			cancel()
			t.pcm = nil
			select {
			case s.done <- sttResult{turn: t, text: text, err: err}:
			case <-ctx.Done():
			}
		})
	}
}

// transcribed notes a fallback transcript as the caller's line (unless the
// provider's came meanwhile) and keeps it for re-seeding, in its place.
func (s *sttFallback) transcribed(r sttResult) {
	s.busy--
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

// toPCM16 is a turn's audio as PCM16LE: G.711 turns are decoded here, off
// the media path, only when a turn is transcribed.
func toPCM16(f media.Format, audio []byte) []byte {
	var c media.Codec
	switch f.Encoding {
	case media.EncodingPCMU:
		c = media.PCMU
	case media.EncodingPCMA:
		c = media.PCMA
	default:
		return audio
	}
	return media.AppendPCM16LE(nil, c.DecodeFrame(nil, audio))
}
