package echo

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pcm returns ms of 24 kHz PCM16: a 300 Hz tone at amp, or silence at amp 0.
func pcm(ms int, amp float64) []byte {
	n := ms * 24
	b := make([]byte, 2*n)
	for i := range n {
		v := int16(amp * math.Sin(2*math.Pi*300*float64(i)/24000))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func open(t *testing.T, opts Options, cfg realtime.SessionConfig) realtime.Session {
	t.Helper()
	if opts.Synthesizer == nil {
		opts.Synthesizer = fixedSynth{}
	}
	s, err := New(opts).Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	// The configuration is in force from session.created on: no
	// session.updated follows unprompted.
	created := next(t, s).(*realtime.SessionCreated)
	want := New(opts).defaultConfig(created.Session.ID)
	want.Merge(cfg)
	require.Equal(t, want.Model, created.Session.Model)
	require.Equal(t, want.InputFormat(), created.Session.InputFormat())
	require.Equal(t, want.OutputFormat(), created.Session.OutputFormat())
	require.Equal(t, want.TurnDetection().Type, created.Session.TurnDetection().Type)
	require.Equal(t, realtime.TypeConversationCreated, next(t, s).EventType())
	return s
}

// feed appends b in 20 ms frames of the given frame size.
func feed(t *testing.T, s realtime.Session, b []byte, frame int) {
	t.Helper()
	for len(b) > 0 {
		n := min(frame, len(b))
		require.NoError(t, s.AppendAudio(b[:n]))
		b = b[n:]
	}
}

func next(t *testing.T, s realtime.Session) realtime.Event {
	t.Helper()
	select {
	case e, ok := <-s.Events():
		require.True(t, ok, "events closed: %v", s.Err())
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return nil
	}
}

func until(t *testing.T, s realtime.Session, typ string) []realtime.Event {
	t.Helper()
	var evs []realtime.Event
	for {
		e := next(t, s)
		evs = append(evs, e)
		if e.EventType() == typ {
			return evs
		}
	}
}

// compact lists event types, collapsing runs of the same type.
func compact(evs []realtime.Event) []string {
	var out []string
	for _, e := range evs {
		if len(out) == 0 || out[len(out)-1] != e.EventType() {
			out = append(out, e.EventType())
		}
	}
	return out
}

func deltas(evs []realtime.Event) []byte {
	var out []byte
	for _, e := range evs {
		if d, ok := e.(*realtime.ResponseOutputAudioDelta); ok {
			out = append(out, d.Delta...)
		}
	}
	return out
}

func find[T realtime.Event](t *testing.T, evs []realtime.Event) T {
	t.Helper()
	for _, e := range evs {
		if v, ok := e.(T); ok {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T", zero)
	return zero
}

type fixedSynth struct{}

func (fixedSynth) Synthesize(_ context.Context, text, _ string, rate int) ([]int16, error) {
	s := make([]int16, rate/10) // 100 ms
	for i := range s {
		s[i] = int16(len(text) + i)
	}
	return s, nil
}

var userTurnOrder = []string{
	realtime.TypeInputAudioBufferSpeechStarted,
	realtime.TypeInputAudioBufferSpeechStopped,
	realtime.TypeInputAudioBufferCommitted,
	realtime.TypeConversationItemAdded,
	realtime.TypeConversationItemDone,
}

var responseOrder = []string{
	realtime.TypeResponseCreated,
	realtime.TypeResponseOutputItemAdded,
	realtime.TypeConversationItemAdded,
	realtime.TypeResponseContentPartAdded,
	realtime.TypeResponseOutputAudioDelta,
	realtime.TypeResponseOutputAudioTranscriptDelta,
	realtime.TypeResponseOutputAudioDelta,
	realtime.TypeResponseOutputAudioDone,
	realtime.TypeResponseOutputAudioTranscriptDone,
	realtime.TypeResponseContentPartDone,
	realtime.TypeResponseOutputItemDone,
	realtime.TypeConversationItemDone,
	realtime.TypeResponseDone,
}

func TestEchoTurnLifecycle(t *testing.T) {
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{})
	in := cat(pcm(500, 0), pcm(1000, 8000), pcm(800, 0))
	feed(t, s, in, 960)
	evs := until(t, s, realtime.TypeResponseDone)
	require.Equal(t, append(append([]string{}, userTurnOrder...), responseOrder...), compact(evs))

	started := find[*realtime.InputAudioBufferSpeechStarted](t, evs)
	stopped := find[*realtime.InputAudioBufferSpeechStopped](t, evs)
	require.Equal(t, 200, started.AudioStartMs, "onset 500 ms minus 300 ms prefix padding")
	require.Equal(t, 2000, stopped.AudioEndMs, "speech end 1500 ms plus 500 ms silence")
	require.Equal(t, started.ItemID, stopped.ItemID)
	require.Equal(t, started.ItemID, find[*realtime.InputAudioBufferCommitted](t, evs).ItemID)

	sameSpeech(t, in[200*48:2000*48], deltas(evs))
	for _, e := range evs {
		if d, ok := e.(*realtime.ResponseOutputAudioDelta); ok {
			require.LessOrEqual(t, len(d.Delta), 4800, "100 ms chunks")
		}
	}
	require.Equal(t, "(echo) you spoke for 1.0 seconds", find[*realtime.ResponseOutputAudioTranscriptDone](t, evs).Transcript)
	done := find[*realtime.ResponseDone](t, evs)
	require.Equal(t, realtime.StatusCompleted, done.Response.Status)
	require.Equal(t, realtime.RoleAssistant, done.Response.Output[0].Role)
	for _, e := range evs {
		require.NotEmpty(t, realtime.EventID(e))
	}
}

func TestEchoG711PassesThroughUntouched(t *testing.T) {
	for _, typ := range []string{realtime.FormatPCMU, realtime.FormatPCMA} {
		t.Run(typ, func(t *testing.T) {
			f := &realtime.AudioFormat{Type: typ}
			s := open(t, Options{Unpaced: true}, realtime.SessionConfig{Audio: &realtime.AudioConfig{
				Input: &realtime.AudioInput{Format: f}, Output: &realtime.AudioOutput{Format: f}}})
			fm := format{typ: typ, rate: 8000}
			speech := fm.encode(nil, format{typ: realtime.FormatPCM, rate: 24000}.decode(nil, pcm(1000, 8000)))
			speech = speech[:8000] // the 24 kHz tone read as 8 kHz samples: 1 s, still loud
			silence := fm.encode(nil, make([]int16, 8*800))
			in := cat(silence[:8*500], speech, silence)
			feed(t, s, in, 160)
			evs := until(t, s, realtime.TypeResponseDone)
			require.Equal(t, 200, find[*realtime.InputAudioBufferSpeechStarted](t, evs).AudioStartMs)
			eqBytes(t, in[200*8:2000*8], deltas(evs))
		})
	}
}

func TestEchoCancelAndBargeIn(t *testing.T) {
	s := open(t, Options{Lead: -1}, realtime.SessionConfig{}) // real-time pacing, no head start
	feed(t, s, cat(pcm(100, 0), pcm(3000, 8000), pcm(600, 0)), 960)
	evs := until(t, s, realtime.TypeResponseOutputAudioDelta)
	respID := evs[len(evs)-1].(*realtime.ResponseOutputAudioDelta).ResponseID
	require.NoError(t, s.Send(context.Background(), &realtime.ResponseCancel{}))
	evs = until(t, s, realtime.TypeResponseDone)
	done := evs[len(evs)-1].(*realtime.ResponseDone)
	require.Equal(t, respID, done.Response.ID)
	require.Equal(t, realtime.StatusCancelled, done.Response.Status)
	require.Equal(t, realtime.ReasonClientCancelled, done.Response.StatusDetails.Value.Reason)
	require.Equal(t, realtime.StatusIncomplete, done.Response.Output[0].Status)
	require.Less(t, len(deltas(evs)), 3700*48, "cancel stops the deltas")

	require.NoError(t, s.Send(context.Background(), &realtime.ResponseCancel{Header: realtime.Header{EventID: "c2"}}))
	e := next(t, s).(*realtime.ErrorEvent)
	require.Equal(t, "response_cancel_not_active", e.Error.Code)
	require.Equal(t, "c2", e.Error.EventID)

	// Barge-in: the caller speaks during a response.
	feed(t, s, cat(pcm(2000, 8000), pcm(600, 0)), 960)
	until(t, s, realtime.TypeResponseOutputAudioDelta)
	feed(t, s, pcm(300, 8000), 960)
	evs = until(t, s, realtime.TypeResponseDone)
	done = evs[len(evs)-1].(*realtime.ResponseDone)
	started := slices.IndexFunc(evs, func(e realtime.Event) bool { return e.EventType() == realtime.TypeInputAudioBufferSpeechStarted })
	require.GreaterOrEqual(t, started, 0, "speech_started before the cancelled response.done")
	for _, e := range evs[started:] {
		require.NotEqual(t, realtime.TypeResponseOutputAudioDelta, e.EventType(), "no delta after barge-in")
	}
	require.Equal(t, realtime.StatusCancelled, done.Response.Status)
	require.Equal(t, realtime.ReasonTurnDetected, done.Response.StatusDetails.Value.Reason)
}

func TestEchoTruncate(t *testing.T) {
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{})
	feed(t, s, cat(pcm(300, 0), pcm(1000, 8000), pcm(600, 0)), 960)
	evs := until(t, s, realtime.TypeResponseDone)
	user := find[*realtime.InputAudioBufferCommitted](t, evs).ItemID
	asst := find[*realtime.ResponseOutputItemAdded](t, evs).Item.ID
	have := len(deltas(evs)) / 48

	for _, tc := range []struct {
		name  string
		ev    *realtime.ConversationItemTruncate
		code  string
		endMs int
	}{
		{"within audio", &realtime.ConversationItemTruncate{ItemID: asst, AudioEndMs: 500}, "", 500},
		{"beyond audio", &realtime.ConversationItemTruncate{ItemID: asst, AudioEndMs: have + 1}, "invalid_value", 0},
		{"unknown item", &realtime.ConversationItemTruncate{ItemID: "nope", AudioEndMs: 10}, "item_not_found", 0},
		{"user item", &realtime.ConversationItemTruncate{ItemID: user, AudioEndMs: 10}, "invalid_value", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, s.Send(context.Background(), tc.ev))
			e := next(t, s)
			if tc.code != "" {
				require.Equal(t, tc.code, e.(*realtime.ErrorEvent).Error.Code)
				return
			}
			tr := e.(*realtime.ConversationItemTruncated)
			require.Equal(t, tc.endMs, tr.AudioEndMs)
			require.Equal(t, asst, tr.ItemID)
		})
	}
	// After truncating to 500 ms, 600 ms is beyond the audio.
	require.NoError(t, s.Send(context.Background(), &realtime.ConversationItemTruncate{ItemID: asst, AudioEndMs: 600}))
	require.Equal(t, "invalid_value", next(t, s).(*realtime.ErrorEvent).Error.Code)
	require.NoError(t, s.Send(context.Background(), &realtime.ConversationItemRetrieve{ItemID: asst}))
	got := next(t, s).(*realtime.ConversationItemRetrieved)
	require.Empty(t, got.Item.Content[0].Transcript, "truncation drops the unheard transcript")
}

func TestEchoManualCommitTextAndErrors(t *testing.T) {
	off := realtime.SessionConfig{Audio: &realtime.AudioConfig{Input: &realtime.AudioInput{TurnDetection: realtime.Null[realtime.TurnDetection]()}}}
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{})
	ctx := context.Background()

	require.NoError(t, s.Send(ctx, &realtime.InputAudioBufferCommit{}))
	require.Equal(t, "invalid_value", next(t, s).(*realtime.ErrorEvent).Error.Code, "commit needs turn_detection null")

	require.NoError(t, s.Send(ctx, &realtime.SessionUpdate{Session: off}))
	up := next(t, s).(*realtime.SessionUpdated)
	require.True(t, up.Session.Audio.Input.TurnDetection.IsNull())

	require.NoError(t, s.Send(ctx, &realtime.InputAudioBufferCommit{}))
	require.Equal(t, "input_audio_buffer_commit_empty", next(t, s).(*realtime.ErrorEvent).Error.Code)

	in := cat(pcm(200, 0), pcm(700, 8000), pcm(200, 0))
	feed(t, s, in, 960)
	require.NoError(t, s.Send(ctx, &realtime.InputAudioBufferCommit{}))
	evs := until(t, s, realtime.TypeConversationItemDone)
	require.Equal(t, []string{realtime.TypeInputAudioBufferCommitted, realtime.TypeConversationItemAdded, realtime.TypeConversationItemDone}, compact(evs),
		"no VAD events and no automatic response in manual mode")
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
	evs = until(t, s, realtime.TypeResponseDone)
	sameSpeech(t, in, deltas(evs))

	// A user text message (a greeting, DTMF digits) is spoken.
	require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText("DTMF 1 2 3")}))
	added := next(t, s).(*realtime.ConversationItemAdded)
	require.Equal(t, "DTMF 1 2 3", added.Item.Content[0].Text)
	next(t, s) // conversation.item.done
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
	evs = until(t, s, realtime.TypeResponseDone)
	want, _ := fixedSynth{}.Synthesize(ctx, "DTMF 1 2 3", "", 24000)
	require.Equal(t, format{typ: realtime.FormatPCM, rate: 24000}.encode(nil, want), deltas(evs))
	require.Equal(t, "DTMF 1 2 3", find[*realtime.ResponseOutputAudioTranscriptDone](t, evs).Transcript)

	// Clear, delete, placement and errors keep the session open.
	for _, tc := range []struct {
		ev   realtime.Event
		want string
		code string
	}{
		{&realtime.InputAudioBufferClear{}, realtime.TypeInputAudioBufferCleared, ""},
		{&realtime.ConversationItemDelete{ItemID: added.Item.ID}, realtime.TypeConversationItemDeleted, ""},
		{&realtime.ConversationItemDelete{ItemID: added.Item.ID}, realtime.TypeError, "item_not_found"},
		{&realtime.ConversationItemCreate{PreviousItemID: "nope", Item: realtime.UserText("x")}, realtime.TypeError, "item_not_found"},
		{&realtime.ConversationItemCreate{PreviousItemID: "root", Item: realtime.UserText("first")}, realtime.TypeConversationItemAdded, ""},
		{&realtime.ConversationItemCreate{Item: realtime.Item{Type: "bogus"}}, realtime.TypeError, "invalid_value"},
		{&realtime.SessionUpdate{Session: realtime.SessionConfig{Audio: &realtime.AudioConfig{Output: &realtime.AudioOutput{Format: &realtime.AudioFormat{Type: "audio/opus"}}}}}, realtime.TypeError, "invalid_value"},
		{&realtime.SessionUpdate{Session: realtime.SessionConfig{Type: "transcription"}}, realtime.TypeError, "invalid_value"},
		{&realtime.Unknown{Type: "bogus.event", Raw: []byte(`{"type":"bogus.event"}`)}, realtime.TypeError, "unknown_event"},
		{&realtime.SessionCreated{}, realtime.TypeError, "unknown_event"},
	} {
		require.NoError(t, s.Send(ctx, tc.ev))
		e := next(t, s)
		require.Equal(t, tc.want, e.EventType(), "%T", tc.ev)
		if tc.code != "" {
			require.Equal(t, tc.code, e.(*realtime.ErrorEvent).Error.Code)
		}
		if e.EventType() == realtime.TypeConversationItemAdded {
			next(t, s) // conversation.item.done
		}
	}
	require.Nil(t, s.Err())
}

func TestEchoSessionUpdateMergesAndVADSettings(t *testing.T) {
	silence := 200
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{Instructions: ptr("hi"), Audio: &realtime.AudioConfig{Input: &realtime.AudioInput{
		TurnDetection: realtime.Some(realtime.TurnDetection{Type: realtime.TurnServerVAD, SilenceDurationMs: &silence, CreateResponse: ptr(false)})}}})
	require.NoError(t, s.Send(context.Background(), &realtime.SessionUpdate{Session: realtime.SessionConfig{Tools: []realtime.Tool{{Type: "function", Name: "end_call"}}}}))
	up := next(t, s).(*realtime.SessionUpdated)
	require.Equal(t, "hi", *up.Session.Instructions, "members absent from an update are kept")
	require.Equal(t, "end_call", up.Session.Tools[0].Name)
	td := up.Session.Audio.Input.TurnDetection.Value
	require.Equal(t, 200, *td.SilenceDurationMs)
	require.Equal(t, 300, *td.PrefixPaddingMs, "defaults filled in")

	feed(t, s, cat(pcm(400, 0), pcm(500, 8000), pcm(400, 0)), 960)
	evs := until(t, s, realtime.TypeConversationItemDone)
	require.Equal(t, 1100, find[*realtime.InputAudioBufferSpeechStopped](t, evs).AudioEndMs, "900 ms + 200 ms silence")
	select {
	case e := <-s.Events():
		t.Fatalf("create_response false must not answer, got %s", e.EventType())
	case <-time.After(200 * time.Millisecond):
	}
}

func TestEchoTextModality(t *testing.T) {
	s := open(t, Options{}, realtime.SessionConfig{OutputModalities: []string{"text"}})
	require.NoError(t, s.Send(context.Background(), &realtime.ResponseCreate{Response: &realtime.ResponseParams{Instructions: "Say hello."}}))
	evs := until(t, s, realtime.TypeResponseDone)
	require.Equal(t, "Say hello.", find[*realtime.ResponseOutputTextDone](t, evs).Text)
	require.Empty(t, deltas(evs))
}

func TestEchoAppendAudioNeverBlocks(t *testing.T) {
	s := open(t, Options{AudioQueue: 10, EventBuffer: 4, Unpaced: true}, realtime.SessionConfig{})
	// Nobody reads events: the session stalls on emit, the queue fills.
	frame := pcm(20, 8000)
	quiet := pcm(20, 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			if i%100 < 60 {
				_ = s.AppendAudio(frame)
			} else {
				_ = s.AppendAudio(quiet)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("AppendAudio blocked")
	}
	require.Positive(t, s.Stats().AudioDropped)
}

func TestEchoCloseIsIdempotent(t *testing.T) {
	s, err := New(Options{Synthesizer: Tone{}}).Open(context.Background(), realtime.SessionConfig{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Err(), realtime.ErrClosed)
	require.ErrorIs(t, s.AppendAudio([]byte{0, 0}), realtime.ErrClosed)
	require.ErrorIs(t, s.Send(context.Background(), &realtime.ResponseCreate{}), realtime.ErrClosed)
	for range s.Events() {
	}
}

// eqBytes compares audio without dumping it.
func eqBytes(t *testing.T, want, got []byte) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("audio length: want %d bytes, got %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("audio differs at byte %d of %d", i, len(want))
		}
	}
}

// sameSpeech checks that got, 24 kHz PCM16, is want as a caller hears it
// through the echo: kept at 8 kHz µ-law, so equal in length and alike in
// the telephone band (realtimetest.Correlation at least 0.95: a tone gives
// 0.997, espeak's speech 0.98, speech 6 ms off 0.3).
func sameSpeech(t *testing.T, want, got []byte) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("audio length: want %d bytes, got %d", len(want), len(got))
	}
	c := realtimetest.Correlation(want, got)
	t.Logf("echo against the caller's audio: correlation %.4f", c)
	if c < 0.95 {
		t.Fatalf("the echo is not the caller's audio: correlation %.3f", c)
	}
}

// TestOldItemsForgetTheirAudio: a long conversation keeps the audio of its
// newest items only, so memory stays bounded; an old answer can no longer
// be truncated, the latest one can.
func TestOldItemsForgetTheirAudio(t *testing.T) {
	s := open(t, Options{Unpaced: true}, realtime.SessionConfig{})
	var answers []string
	for turn := 0; turn < 6; turn++ {
		feed(t, s, cat(pcm(200, 0), pcm(400, 8000), pcm(900, 0)), 960)
		evs := until(t, s, realtime.TypeResponseDone)
		answers = append(answers, find[*realtime.ResponseOutputItemAdded](t, evs).Item.ID)
	}
	require.NoError(t, s.Send(context.Background(), &realtime.ConversationItemTruncate{ItemID: answers[0], AudioEndMs: 10}))
	e := until(t, s, realtime.TypeError)
	require.Contains(t, e[len(e)-1].(*realtime.ErrorEvent).Error.Message, "with audio")
	require.NoError(t, s.Send(context.Background(), &realtime.ConversationItemTruncate{ItemID: answers[5], AudioEndMs: 10}))
	until(t, s, realtime.TypeConversationItemTruncated)
}

// TestEchoLongTurnKeepsItsLastMaxTurn: a caller who speaks for 6 s in one
// turn is answered with the turn's last MaxTurn (1 s here), which is all a
// session keeps of it, so its memory does not grow with the turn (the
// appliance's RSS per call is measured by make bench-calls ENGINE=echo).
func TestEchoLongTurnKeepsItsLastMaxTurn(t *testing.T) {
	s := open(t, Options{Unpaced: true, MaxTurn: time.Second}, realtime.SessionConfig{})
	speech := pcm(6000, 8000)
	in := cat(pcm(500, 0), speech, pcm(800, 0))
	feed(t, s, in, 960)
	evs := until(t, s, realtime.TypeResponseDone)
	stopped := find[*realtime.InputAudioBufferSpeechStopped](t, evs)
	require.Equal(t, 7000, stopped.AudioEndMs, "speech end 6500 ms plus 500 ms silence")
	sameSpeech(t, in[6000*48:7000*48], deltas(evs))
}
