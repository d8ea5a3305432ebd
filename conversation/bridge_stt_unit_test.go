package conversation

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
)

// sttFunc is a Transcriber of a function.
type sttFunc func(ctx context.Context, pcm []byte, rate int) (string, error)

func (f sttFunc) Transcribe(ctx context.Context, pcm []byte, rate int) (string, error) {
	return f(ctx, pcm, rate)
}

// TestSTTFallbackUnit: a turn the provider does not transcribe goes to
// the Transcriber (at once when the session has no transcription, after
// the wait when it has), at most two at a time; the provider's transcript
// cancels the fallback, a failed one makes it due at once; a G.711 turn
// is decoded to PCM16 first; the text is noted at the turn's time and
// goes into the history where the turn ended.
func TestSTTFallbackUnit(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(5000, 0)
	rec, later := &recordRec{}, &spawnLater{}
	var h history
	var rates []int
	var lens []int
	tr := sttFunc(func(_ context.Context, pcm []byte, rate int) (string, error) {
		rates, lens = append(rates, rate), append(lens, len(pcm))
		return "  hello there ", nil
	})
	s := newSTTFallback(tr, media.FormatPCMU, newSTTBounds(8, time.Minute, nil), rec, &h, later.spawn, zerolog.Nop())
	s.wait, s.timeout = 2*time.Second, time.Second
	turn := func(item string, at time.Time, audio time.Duration) {
		s.speechStarted(item)
		s.audio(make([]byte, int(audio/time.Millisecond)*8)) // 8 kHz µ-law: 8 bytes a ms
		s.turnEnded(item, at)
	}

	h.remember(realtime.UserText("greeting"))
	turn("u1", t0, 100*time.Millisecond)
	require.Empty(t, s.pending, "too short to transcribe")
	turn("u1", t0, 400*time.Millisecond)
	turn("u2", t0, 400*time.Millisecond)
	turn("u3", t0, 400*time.Millisecond)
	h.remember(realtime.UserText("answer"))
	s.dispatch(ctx, t0)
	require.Len(t, later.take(), 2, "two at once")
	s.dispatch(ctx, t0.Add(time.Hour))
	require.Empty(t, later.take(), "the third waits for one to finish")

	// One finishes: noted at its turn's time, the history gets it before
	// the answer that followed it.
	s.transcribed(sttResult{turn: sttTurn{item: "u1", at: t0, seq: 1}, text: "  hello there "})
	require.Equal(t, []string{call.NoteTranscript + "/user: hello there"}, rec.lines())
	require.Equal(t, t0, rec.notes[0].At)
	require.Equal(t, map[string]string{"source": "stt"}, rec.notes[0].Data)
	require.Equal(t, []string{"greeting", "hello there", "answer"}, historyTexts(&h))
	s.dispatch(ctx, t0)
	fns := later.take()
	require.Len(t, fns, 1)
	fns[0]()
	r := <-s.results()
	require.Equal(t, "u3", r.turn.item)
	require.Equal(t, []int{8000}, rates)
	require.Equal(t, []int{2 * 3200}, lens, "decoded to PCM16 before it is sent")

	// The provider transcribes now: the fallback waits, and the provider's
	// transcript (or a failure) decides.
	s.done.running = 0
	s.sessionConfig(realtime.SessionConfig{Audio: &realtime.AudioConfig{Input: &realtime.AudioInput{
		Transcription: realtime.Some(realtime.Transcription{Model: "m"})}}})
	turn("p1", t0, time.Second)
	turn("p2", t0, time.Second)
	turn("p3", t0, time.Second)
	s.dispatch(ctx, t0.Add(2*time.Second-time.Millisecond))
	require.Empty(t, later.take(), "within the wait")
	s.providerTranscribed("p1")
	s.transcribeNow("p2")
	s.dispatch(ctx, t0.Add(time.Millisecond))
	require.Len(t, later.take(), 1, "the failed one at once")
	s.dispatch(ctx, t0.Add(2*time.Second))
	require.Len(t, later.take(), 1, "the untranscribed one after the wait")
	require.Empty(t, s.pending)
	turn("p1", t0, time.Second)
	require.Empty(t, s.pending, "an item the provider transcribed is never sent")

	// A late fallback whose turn the provider transcribed meanwhile, an
	// empty text, a failure: nothing noted.
	n := len(rec.lines())
	s.done.running = 3
	s.transcribed(sttResult{turn: sttTurn{item: "p1"}, text: "x"})
	s.transcribed(sttResult{turn: sttTurn{item: "p9"}, text: "  "})
	s.transcribed(sttResult{turn: sttTurn{item: "p8"}, err: context.DeadlineExceeded})
	require.Len(t, rec.lines(), n)
	require.Zero(t, s.done.running)

	// Behind: the oldest waiting turn is dropped.
	for i := range maxSTTPending + 2 {
		turn(string(rune('a'+i)), t0, time.Second)
	}
	require.Len(t, s.pending, maxSTTPending)
	require.Equal(t, "c", s.pending[0].item)
}

// TestSTTFallbackOff: without a Transcriber the fallback is nil and every
// step is a no-op.
func TestSTTFallbackOff(t *testing.T) {
	var s *sttFallback
	s.audio(make([]byte, 160))
	s.speechStarted("u1")
	s.turnEnded("u1", time.Now())
	s.providerTranscribed("u1")
	s.transcribeNow("u1")
	s.sessionConfig(realtime.SessionConfig{})
	s.dispatch(context.Background(), time.Now())
	s.adopt(media.FormatPCMU, 8000)
	s.drop()
	require.Nil(t, s.results())
}
