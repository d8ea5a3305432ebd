package conversation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/realtime"
	xfer "switchboard/transfer"
)

func newTestTransfer(spawn spawnFunc) (*transfer, *speakerRec, *controlsRec, *recordRec, *sentRec) {
	sp, ctl, rec, sent := &speakerRec{}, &controlsRec{}, &recordRec{}, &sentRec{}
	tr := newTransfer(sp, ctl, rec, sent.send, spawn, zerolog.Nop())
	tr.targets = []agent.TransferTarget{{Name: "sales", URI: "sip:sales@127.0.0.1"}, {Name: "support", URI: "sip:support@127.0.0.1"}}
	tr.headers = func(t agent.TransferTarget) []call.Header { return []call.Header{{Name: "X-Target", Value: t.Name}} }
	return tr, sp, ctl, rec, sent
}

// TestTransferAnnounceThenRefer: the model's choice waits for the
// announcement to render, plays it (noted as the assistant's line), and
// only the step after, once the loop saw it played out, sends the REFER
// to the target's URI with its rendered headers; success comes back on
// done.
func TestTransferAnnounceThenRefer(t *testing.T) {
	ctx := context.Background()
	tr, sp, ctl, rec, _ := newTestTransfer(spawnNow)
	require.False(t, tr.request("fc_1", "billing", ""), "not a target of the agent")
	require.False(t, tr.due())

	tr.announce = &prompt{text: "Transferring you now.", done: make(chan struct{})}
	require.True(t, tr.request("fc_1", "support", ""))
	require.True(t, tr.due())
	require.False(t, tr.step(ctx), "the announcement is still rendering")
	require.Empty(t, sp.played())

	pcm := make([]byte, 3200)
	tr.announce.pcm.Store(&pcm)
	close(tr.announce.done)
	require.False(t, tr.step(ctx), "the REFER waits for the announcement to play")
	require.Equal(t, []string{announceItem}, sp.played())
	_, transfers, _ := ctl.snapshot()
	require.Empty(t, transfers)

	require.True(t, tr.step(ctx))
	require.False(t, tr.due(), "started")
	require.NoError(t, <-tr.done.ch)
	_, transfers, _ = ctl.snapshot()
	require.Equal(t, []string{"sip:support@127.0.0.1"}, transfers)
	require.Equal(t, [][]call.Header{{{Name: "X-Target", Value: "support"}}}, ctl.headers)
	require.Equal(t, []string{call.NoteTranscript + "/assistant: Transferring you now.", call.NoteTransfer + ": sip:support@127.0.0.1"}, rec.lines())
	require.Len(t, sp.played(), 1, "the announcement once")
}

// TestTransferWithoutAnnouncement: no announcement (none rendered, or it
// failed to render): the REFER goes at the first step.
func TestTransferWithoutAnnouncement(t *testing.T) {
	ctx := context.Background()
	tr, sp, _, _, _ := newTestTransfer(spawnNow)
	require.True(t, tr.request("fc_1", "sales", ""))
	require.True(t, tr.step(ctx))
	require.NoError(t, <-tr.done.ch)

	tr, sp, _, _, _ = newTestTransfer(spawnNow)
	tr.announce = &prompt{text: "x", done: make(chan struct{})}
	close(tr.announce.done) // rendering failed
	require.True(t, tr.request("fc_1", "sales", ""))
	require.True(t, tr.step(ctx))
	require.Empty(t, sp.played())
}

// TestTransferFailed: a refused REFER keeps the call: it is noted and the
// model gets the function's error output and is asked to answer; the
// transfer is over (the model may choose again).
func TestTransferFailed(t *testing.T) {
	ctx := context.Background()
	later := &spawnLater{}
	tr, _, ctl, rec, sent := newTestTransfer(later.spawn)
	ctl.transferErr = errors.New("sip 603 Decline")
	require.True(t, tr.request("fc_9", "sales", ""))
	require.True(t, tr.step(ctx))
	fns := later.take()
	require.Len(t, fns, 1, "the REFER runs in a goroutine of its own")
	fns[0]()
	err := <-tr.done.ch
	require.EqualError(t, err, "sip 603 Decline")
	tr.failed(ctx, err)
	require.False(t, tr.due())
	evs := sent.take()
	require.Equal(t, []string{realtime.TypeConversationItemCreate, realtime.TypeResponseCreate}, typesOf(evs))
	out := evs[0].(*realtime.ConversationItemCreate).Item
	require.Equal(t, "fc_9", out.CallID)
	require.JSONEq(t, `{"error":{"message":"the transfer failed: sip 603 Decline"}}`, out.Output)
	require.Equal(t, []string{call.NoteTransfer + ": sip:sales@127.0.0.1", call.NoteTransfer + ": failed: sip 603 Decline",
		call.NoteToolResult + ": " + agent.ToolTransferCall}, rec.lines())
	require.True(t, tr.request("fc_10", "support", ""), "a new choice")
}

// TestTransferTargetWithMode: a target with a mode goes to the transfer
// service (handoff), not a REFER: its request carries the target's
// briefing followed by the model's summary, its hold audio, accept and
// timeout, and the rendered headers; a refusal of the service goes back
// to the model as the function's error.
func TestTransferTargetWithMode(t *testing.T) {
	ctx := context.Background()
	tr, _, ctl, rec, sent := newTestTransfer(spawnNow)
	tr.targets = append(tr.targets, agent.TransferTarget{Name: "desk", URI: "tel:+14155550123", Mode: "warm",
		Briefing: "A caller from the website.", HoldAudio: "silence", Accept: "answer", TimeoutS: 15})
	var got []xfer.Request
	var refuse error
	tr.handoff = func(_ context.Context, r xfer.Request, callID string) (*xfer.Transfer, error) {
		require.Equal(t, "fc_3", callID)
		got = append(got, r)
		return nil, refuse
	}
	require.True(t, tr.request("fc_3", "desk", "They want to change their order."))
	require.True(t, tr.due())
	require.False(t, tr.step(ctx), "a handoff is not a busy tool: the caller holds")
	require.False(t, tr.due())
	require.Len(t, got, 1)
	require.Equal(t, xfer.Request{TargetURI: "tel:+14155550123", Mode: xfer.ModeWarm, Briefing: "A caller from the website. They want to change their order.",
		HoldAudio: "silence", Accept: xfer.AcceptAnswer, Timeout: 15 * time.Second, Headers: []call.Header{{Name: "X-Target", Value: "desk"}}, By: "agent"}, got[0])
	_, refers, _ := ctl.snapshot()
	require.Empty(t, refers, "no REFER")

	refuse = errors.New("conversation: a transfer of this call is in progress")
	require.True(t, tr.request("fc_3", "desk", ""))
	require.False(t, tr.step(ctx))
	evs := sent.take()
	require.Equal(t, []string{realtime.TypeConversationItemCreate, realtime.TypeResponseCreate}, typesOf(evs))
	require.JSONEq(t, `{"error":{"message":"the transfer could not start: conversation: a transfer of this call is in progress"}}`,
		evs[0].(*realtime.ConversationItemCreate).Item.Output)
	require.Equal(t, "A caller from the website.", got[1].Briefing, "no summary: the target's briefing alone")
	require.Equal(t, []string{call.NoteToolResult + ": " + agent.ToolTransferCall}, rec.lines())
}
