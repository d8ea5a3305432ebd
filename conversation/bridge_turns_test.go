package conversation

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/realtime"
)

func newTestTurns(idle time.Duration) (*turnTaking, *speakerRec, *recordRec, *sentRec, *[]realtime.Event) {
	sp, rec, sent := &speakerRec{}, &recordRec{}, &sentRec{}
	var observed []realtime.Event
	t := newTurnTaking(sp, rec, sent.send, func(ev realtime.Event) { observed = append(observed, ev) },
		150*time.Millisecond, idle, zerolog.Nop())
	return t, sp, rec, sent, &observed
}

// TestTurnTakingBargeIn: the caller speaking over an answer flushes the
// playout, truncates the answer's item at what was heard, and cancels the
// response once the grace ran out, unless the provider ended it first; a
// barge-in over the appliance's own audio (the greeting) truncates
// nothing.
func TestTurnTakingBargeIn(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	tt, sp, _, sent, _ := newTestTurns(0)

	tt.responseCreated()
	tt.itemAdded(realtime.Item{ID: "a1", Type: realtime.ItemMessage})
	tt.itemAdded(realtime.Item{ID: "f1", Type: realtime.ItemFunctionCall})
	sp.flushItem, sp.flushMs = "a1", 640
	tt.bargeIn(ctx, t0)
	require.Equal(t, 1, sp.flushed())
	evs := sent.take()
	require.Len(t, evs, 1)
	require.Equal(t, &realtime.ConversationItemTruncate{ItemID: "a1", AudioEndMs: 640}, evs[0])
	require.False(t, tt.drained(), "the response still runs")

	tt.cancelDue(ctx, t0.Add(150*time.Millisecond))
	require.Empty(t, sent.take(), "within the grace the provider may cancel itself")
	tt.cancelDue(ctx, t0.Add(151*time.Millisecond))
	require.Equal(t, []string{realtime.TypeResponseCancel}, typesOf(sent.take()))
	tt.cancelDue(ctx, t0.Add(time.Second))
	require.Empty(t, sent.take(), "one cancel")

	// The provider cancels within the grace: nothing more is sent.
	tt.responseCreated()
	tt.bargeIn(ctx, t0)
	sent.take()
	tt.responseDone(t0.Add(50 * time.Millisecond))
	tt.cancelDue(ctx, t0.Add(time.Second))
	require.Empty(t, sent.take())
	require.True(t, tt.drained())

	// Over the greeting (not a response's item) and with no response.
	sp.flushItem = greetingItem
	tt.bargeIn(ctx, t0)
	tt.cancelDue(ctx, t0.Add(time.Second))
	require.Empty(t, sent.take())
	require.Equal(t, 3, sp.flushed())

	// A function call's item is not audio: never truncated.
	tt.responseCreated()
	sp.flushItem = "f1"
	tt.bargeIn(ctx, t0)
	require.Empty(t, sent.take())
}

// TestTurnTakingInterrupt: the caller's keys interrupt a running answer
// at once (flush, truncate, cancel); with no answer running nothing is
// sent.
func TestTurnTakingInterrupt(t *testing.T) {
	ctx := context.Background()
	tt, sp, _, sent, _ := newTestTurns(0)
	tt.interrupt(ctx)
	require.Empty(t, sent.take())
	require.Zero(t, sp.flushed())

	tt.responseCreated()
	tt.itemAdded(realtime.Item{ID: "a2", Type: realtime.ItemMessage})
	sp.flushItem, sp.flushMs = "a2", 200
	tt.interrupt(ctx)
	require.Equal(t, []string{realtime.TypeConversationItemTruncate, realtime.TypeResponseCancel}, typesOf(sent.take()))
	require.True(t, tt.drained())
	tt.cancelDue(ctx, time.Now().Add(time.Hour))
	require.Empty(t, sent.take())
}

// TestTurnTakingIdleCheckIn: after an answer the caller stays silent for
// idle_timeout_ms: the observer and the record see the timeout, the model
// gets a silent user turn and is asked to answer; speech, a pending
// playout or a call about to end disarm it.
func TestTurnTakingIdleCheckIn(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(2000, 0)
	tt, sp, rec, sent, observed := newTestTurns(8 * time.Second)

	tt.responseCreated()
	tt.responseDone(t0)
	tt.idleDue(ctx, t0.Add(8*time.Second))
	require.Empty(t, sent.take(), "not before the idle time has passed")
	tt.idleDue(ctx, t0.Add(8*time.Second+time.Millisecond))
	evs := sent.take()
	require.Equal(t, []string{realtime.TypeConversationItemCreate, realtime.TypeResponseCreate}, typesOf(evs))
	require.Equal(t, "(The caller has said nothing for 8 seconds. Check in briefly.)",
		evs[0].(*realtime.ConversationItemCreate).Item.Content[0].Text)
	require.Len(t, *observed, 1)
	require.IsType(t, &realtime.InputAudioBufferTimeoutTriggered{}, (*observed)[0])
	require.Equal(t, []string{call.NoteEvent + ": " + realtime.TypeInputAudioBufferTimeoutTriggered}, rec.lines())
	tt.idleDue(ctx, t0.Add(time.Minute))
	require.Empty(t, sent.take(), "once")

	// The caller speaks: disarmed.
	tt.responseDone(t0)
	tt.quiet()
	tt.idleDue(ctx, t0.Add(time.Minute))
	require.Empty(t, sent.take())

	// Audio still playing when it is due: disarmed, not delayed.
	tt.responseDone(t0)
	sp.pending = time.Second
	tt.idleDue(ctx, t0.Add(time.Minute))
	sp.pending = 0
	tt.idleDue(ctx, t0.Add(2*time.Minute))
	require.Empty(t, sent.take())

	// A call that ends after this answer checks in no more.
	tt.endAfterAnswer("agent ended the call")
	tt.responseDone(t0)
	tt.idleDue(ctx, t0.Add(time.Minute))
	require.Empty(t, sent.take())
	require.Equal(t, "agent ended the call", tt.ending())

	// Without idle_timeout_ms there is no check-in.
	tt0, _, _, sent0, _ := newTestTurns(0)
	tt0.responseDone(t0)
	tt0.idleDue(ctx, t0.Add(time.Hour))
	require.Empty(t, sent0.take())
}

// TestTurnTakingDrained: drained means no response runs and the caller
// heard everything queued; a lost session forgets its response.
func TestTurnTakingDrained(t *testing.T) {
	tt, sp, _, _, _ := newTestTurns(0)
	require.True(t, tt.drained())
	sp.pending = 20 * time.Millisecond
	require.False(t, tt.drained())
	sp.pending = 0
	tt.responseCreated()
	require.False(t, tt.drained())
	tt.lost()
	require.True(t, tt.drained())
}
