package conversation

import (
	"context"
	"strings"
	"switchboard/media"
	"sync"
	"time"

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
	if b.format.Duration(len(pcm)) < minTurnAudio || b.heardItems[item] {
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
		tr, rate, timeout := b.rt.opts.Transcriber, b.format.Rate, b.rt.opts.TranscribeTimeout
		t.pcm = toPCM16(b.format, t.pcm)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer contain(b.log, b.phone, "transcription")
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
