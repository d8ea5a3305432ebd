package conversation

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/realtime"
)

// sendFunc sends one client event to the call's current model session
// (the bridge's send: a failure is logged, a closed session ignored).
type sendFunc func(ctx context.Context, ev realtime.Event)

// turnTaking is who speaks when (Run goroutine): whether the model's
// response is running, which items came from responses (a barge-in may
// truncate them), the barge-in itself (the playout flushed within one
// frame, the model told how much of its answer the caller heard, the
// response cancelled unless the provider does it within the grace), the
// idle check-in once the caller stays silent after an answer, and the end
// of the call once the answer that ends it has played.
type turnTaking struct {
	speaker call.Speaker
	record  call.Record
	send    sendFunc
	// observe shows the appliance's own events (the idle check-in) to the
	// call's observer, as the model's are.
	observe func(realtime.Event)
	log     zerolog.Logger
	// grace is how long after speech_started the provider may cancel its
	// response itself before response.cancel goes (RuntimeOptions.CancelGrace).
	grace time.Duration
	// idle is the agent's idle_timeout_ms (0: no check-in).
	idle time.Duration

	active    bool            // a response is running
	assistant map[string]bool // items that came from responses: truncatable
	cancelAt  time.Time       // send response.cancel then, if still active
	idleAt    time.Time       // check in then, if the caller stays silent
	end       string          // end once the current answer has played
}

func newTurnTaking(sp call.Speaker, rec call.Record, send sendFunc, observe func(realtime.Event), grace, idle time.Duration,
	log zerolog.Logger) *turnTaking {
	return &turnTaking{speaker: sp, record: rec, send: send, observe: observe, grace: grace, idle: idle, log: log,
		assistant: map[string]bool{}}
}

// responseCreated: the model started answering.
func (t *turnTaking) responseCreated() {
	t.active = true
	t.idleAt = time.Time{}
}

// itemAdded notes an item of a response; its audio may be truncated.
func (t *turnTaking) itemAdded(it realtime.Item) {
	if it.Type == realtime.ItemMessage {
		t.assistant[it.ID] = true
	}
}

// responseDone: the model finished; the idle check-in is armed.
func (t *turnTaking) responseDone(now time.Time) {
	t.active = false
	t.cancelAt = time.Time{}
	if t.idle > 0 && t.end == "" {
		t.idleAt = now.Add(t.idle)
	}
}

// quiet disarms the idle check-in: the caller spoke, or the call is
// heading somewhere (a transfer, the end).
func (t *turnTaking) quiet() { t.idleAt = time.Time{} }

// bargeIn stops the playout within one frame, tells the model how much of
// its answer the caller heard, and cancels the response unless the
// provider does it itself within the grace.
func (t *turnTaking) bargeIn(ctx context.Context, now time.Time) {
	t.idleAt = time.Time{}
	item, ms := t.speaker.Flush()
	if item != "" && t.assistant[item] {
		t.send(ctx, &realtime.ConversationItemTruncate{ItemID: item, ContentIndex: 0, AudioEndMs: ms})
		t.log.Debug().Str("item_id", item).Int("audio_end_ms", ms).Msg("barge-in: truncated")
	}
	if t.active {
		t.cancelAt = now.Add(t.grace)
	}
}

// interrupt ends a running response at once, as the caller moved on (a
// flush of keys): the playout is flushed, the item truncated, the
// response cancelled.
func (t *turnTaking) interrupt(ctx context.Context) {
	if t.active {
		item, ms := t.speaker.Flush()
		if item != "" && t.assistant[item] {
			t.send(ctx, &realtime.ConversationItemTruncate{ItemID: item, AudioEndMs: ms})
		}
		t.send(ctx, &realtime.ResponseCancel{})
		t.active = false
	}
	t.idleAt = time.Time{}
}

// lost forgets the response of a session that is gone (a reconnect).
func (t *turnTaking) lost() {
	t.active, t.cancelAt = false, time.Time{}
}

// endAfterAnswer ends the call once the current answer has played (the
// end_call tool); no check-in comes meanwhile.
func (t *turnTaking) endAfterAnswer(reason string) {
	t.end = reason
	t.idleAt = time.Time{}
}

// cancelDue sends response.cancel once the grace after a barge-in ran
// out and the provider has not cancelled the response itself.
func (t *turnTaking) cancelDue(ctx context.Context, now time.Time) {
	if !t.cancelAt.IsZero() && now.After(t.cancelAt) {
		t.cancelAt = time.Time{}
		if t.active {
			t.send(ctx, &realtime.ResponseCancel{})
		}
	}
}

// drained reports that no response runs and the caller heard everything.
func (t *turnTaking) drained() bool { return !t.active && t.speaker.Pending() == 0 }

// ending is the reason the call ends once drained ("" while it goes on).
func (t *turnTaking) ending() string { return t.end }

// idleDue checks in once the caller stayed silent for the idle time after
// an answer that has played out.
func (t *turnTaking) idleDue(ctx context.Context, now time.Time) {
	if !t.idleAt.IsZero() && now.After(t.idleAt) {
		t.idleAt = time.Time{}
		if t.speaker.Pending() == 0 {
			t.checkIn(ctx)
		}
	}
}

// checkIn is the appliance's idle_timeout_ms: the caller stayed silent
// after the assistant finished, so a silent user turn goes in and the
// model is asked to check in.
func (t *turnTaking) checkIn(ctx context.Context) {
	secs := t.idle.Seconds()
	t.log.Info().Float64("idle_s", secs).Msg("caller silent: checking in")
	t.observe(&realtime.InputAudioBufferTimeoutTriggered{})
	t.record.Note(call.Note{Kind: call.NoteEvent, Text: realtime.TypeInputAudioBufferTimeoutTriggered})
	t.send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText(
		fmt.Sprintf("(The caller has said nothing for %.0f seconds. Check in briefly.)", secs))})
	t.send(ctx, &realtime.ResponseCreate{})
}
