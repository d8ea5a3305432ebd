package echo

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
)

// openBubbled opens a session whose timers run on the bubble's clock.
func openBubbled(t *testing.T, cfg string) realtime.Session {
	t.Helper()
	var c realtime.SessionConfig
	if cfg != "" {
		e, err := realtime.Decode([]byte(`{"type":"session.update","session":` + cfg + `}`))
		require.NoError(t, err)
		c = e.(*realtime.SessionUpdate).Session
	}
	s, err := New(Options{Synthesizer: fixedSynth{}, Unpaced: true}).Open(context.Background(), c)
	require.NoError(t, err)
	until(t, s, realtime.TypeConversationCreated)
	return s
}

// say makes the assistant speak once: a user text and response.create.
func say(t *testing.T, s realtime.Session) []realtime.Event {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText("hello")}))
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
	return until(t, s, realtime.TypeResponseDone)
}

// TestIdleTimeoutChecksIn: with turn_detection.idle_timeout_ms (here in
// the spec's top-level placement), a caller silent that long after the
// assistant's audio ended gets input_audio_buffer.timeout_triggered, a
// committed silent turn and a check-in response; without it, nothing.
func TestIdleTimeoutChecksIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openBubbled(t, `{"turn_detection":{"type":"server_vad","idle_timeout_ms":3000}}`)
		defer s.Close()
		evs := say(t, s)
		spoken := time.Duration(len(deltas(evs))/48) * time.Millisecond // 24 kHz PCM16
		done := time.Now()
		evs = until(t, s, realtime.TypeResponseDone)
		to := find[*realtime.InputAudioBufferTimeoutTriggered](t, evs)
		require.Equal(t, spoken+3*time.Second, time.Since(done), "counted from the end of the answer's audio")
		require.NotEmpty(t, to.ItemID)
		require.Equal(t, to.ItemID, find[*realtime.InputAudioBufferCommitted](t, evs).ItemID, "the silent turn is committed")
		require.Equal(t, idleCheckIn, find[*realtime.ResponseOutputAudioTranscriptDone](t, evs).Transcript)
		require.Equal(t, []string{realtime.TypeInputAudioBufferTimeoutTriggered, realtime.TypeInputAudioBufferCommitted}, compact(evs)[:2])

		// The check-in is an answer too: silent again, it fires again.
		evs = until(t, s, realtime.TypeInputAudioBufferTimeoutTriggered)
		require.Len(t, evs, 1)
	})
	synctest.Test(t, func(t *testing.T) {
		s := openBubbled(t, `{"turn_detection":{"type":"server_vad"}}`)
		defer s.Close()
		say(t, s)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case e := <-s.Events():
			t.Fatalf("no idle_timeout_ms, no check-in; got %s", e.EventType())
		default:
		}
	})
}

// TestIdleTimeoutDisarmed: a client event that moves the conversation
// on before the deadline stops the timer.
func TestIdleTimeoutDisarmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openBubbled(t, `{"audio":{"input":{"turn_detection":{"type":"server_vad","idle_timeout_ms":2000}}}}`)
		defer s.Close()
		say(t, s)
		require.NoError(t, s.Send(context.Background(), &realtime.InputAudioBufferClear{}))
		until(t, s, realtime.TypeInputAudioBufferCleared)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case e := <-s.Events():
			t.Fatalf("the timer was stopped; got %s", e.EventType())
		default:
		}
	})
}

// TestTextResponseKeepsItsText: a text-only response's item carries its
// text in response.output_item.done, conversation.item.done and
// response.done.
func TestTextResponseKeepsItsText(t *testing.T) {
	s := open(t, Options{}, realtime.SessionConfig{OutputModalities: []string{"text"}})
	require.NoError(t, s.Send(context.Background(), &realtime.ResponseCreate{Response: &realtime.ResponseParams{Instructions: "Say hello."}}))
	evs := until(t, s, realtime.TypeResponseDone)
	check := func(where string, it realtime.Item) {
		require.Len(t, it.Content, 1, where)
		require.Equal(t, realtime.ContentOutputText, it.Content[0].Type, where)
		require.Equal(t, "Say hello.", it.Content[0].Text, where)
	}
	check("response.output_item.done", find[*realtime.ResponseOutputItemDone](t, evs).Item)
	check("conversation.item.done", find[*realtime.ConversationItemDone](t, evs).Item)
	done := find[*realtime.ResponseDone](t, evs)
	require.Len(t, done.Response.Output, 1)
	check("response.done", done.Response.Output[0])
}
