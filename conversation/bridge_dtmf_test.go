package conversation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/dtmf"
)

func newTestKeypad(p dtmf.Policy, spawn spawnFunc) (*keypad, *controlsRec, *recordRec, *[]string) {
	ctl, rec := &controlsRec{}, &recordRec{}
	var toModel []string
	k := newKeypad(p, 2*time.Second, ctl, rec, spawn, func(_ context.Context, text string) { toModel = append(toModel, text) },
		zerolog.Nop())
	return k, ctl, rec, &toModel
}

func key(d byte, at time.Time) dtmf.Event {
	return dtmf.Event{Digit: d, Source: dtmf.SourceRTP, At: at}
}

// TestKeypadFlushes: keys are buffered and go to the model as one user
// turn on #, after the idle time, or when the caller starts speaking,
// noted as the caller's line.
func TestKeypadFlushes(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(3000, 0)
	k, _, rec, toModel := newTestKeypad(dtmf.Policy{}, spawnNow)

	for i, d := range []byte("12#") {
		require.NoError(t, k.key(ctx, key(d, t0.Add(time.Duration(i)*100*time.Millisecond))))
	}
	require.Equal(t, []string{"The caller entered 12 on the phone keypad and pressed # to finish."}, *toModel)

	require.NoError(t, k.key(ctx, key('7', t0.Add(time.Second))))
	k.tick(ctx, t0.Add(2*time.Second))
	require.Len(t, *toModel, 1, "not before the idle time")
	k.tick(ctx, t0.Add(3*time.Second+time.Millisecond))
	require.Equal(t, "The caller entered 7 on the phone keypad.", (*toModel)[1])

	require.NoError(t, k.key(ctx, key('4', t0.Add(4*time.Second))))
	k.speechStarted(ctx, t0.Add(4*time.Second+100*time.Millisecond))
	require.Equal(t, "The caller entered 4 on the phone keypad, then started speaking.", (*toModel)[2])
	k.speechStarted(ctx, t0.Add(5*time.Second))
	require.Len(t, *toModel, 3, "nothing buffered: nothing sent")
	require.Equal(t, []string{
		call.NoteTranscript + "/user: " + (*toModel)[0],
		call.NoteTranscript + "/user: " + (*toModel)[1],
		call.NoteTranscript + "/user: " + (*toModel)[2],
	}, rec.lines())
}

// TestKeypadRedacted: under the redact policy the model hears only how
// many digits, and the record keeps no line of them.
func TestKeypadRedacted(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(3000, 0)
	k, _, rec, toModel := newTestKeypad(dtmf.Policy{Mode: dtmf.ModeRedact}, spawnNow)
	for _, d := range []byte("4111#") {
		require.NoError(t, k.key(ctx, key(d, t0)))
	}
	require.Len(t, *toModel, 1)
	require.NotContains(t, (*toModel)[0], "4111")
	require.Contains(t, (*toModel)[0], "4 digits")
	require.Empty(t, rec.lines())
}

// TestKeypadRoute: a routed key acts at once: hang up ends the loop with
// a HangupError; transfer sends the REFER in a goroutine of the
// conversation and hangs up once it is accepted, or notes its failure
// and keeps the call.
func TestKeypadRoute(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(3000, 0)
	p := dtmf.Policy{Mode: dtmf.ModeRoute, Routes: map[string]dtmf.Action{
		"0": {Kind: dtmf.ActionTransfer, Target: "sip:operator@127.0.0.1"}, "9": {Kind: dtmf.ActionHangup}}}

	k, ctl, _, _ := newTestKeypad(p, spawnNow)
	err := k.key(ctx, key('9', t0))
	var he *call.HangupError
	require.ErrorAs(t, err, &he)

	later := &spawnLater{}
	k, ctl, rec, toModel := newTestKeypad(p, later.spawn)
	require.NoError(t, k.key(ctx, key('1', t0)))
	require.NoError(t, k.key(ctx, key('0', t0.Add(time.Second))))
	require.Equal(t, []string{"The caller entered 1 on the phone keypad."}, *toModel, "what was typed first is flushed")
	fns := later.take()
	require.Len(t, fns, 1, "the REFER runs in a goroutine of its own")
	hangups, transfers, _ := ctl.snapshot()
	require.Empty(t, transfers)
	fns[0]()
	hangups, transfers, _ = ctl.snapshot()
	require.Equal(t, []string{"sip:operator@127.0.0.1"}, transfers)
	require.Equal(t, []string{"transferred (keypad)"}, hangups)
	require.Contains(t, rec.lines(), call.NoteTransfer+": sip:operator@127.0.0.1")

	k, ctl, rec, _ = newTestKeypad(p, spawnNow)
	ctl.transferErr = errors.New("sip 486 Busy Here")
	require.NoError(t, k.key(ctx, key('0', t0)))
	hangups, _, _ = ctl.snapshot()
	require.Empty(t, hangups, "a failed transfer keeps the call")
	require.Contains(t, rec.lines(), call.NoteTransfer+": failed: sip 486 Busy Here")
}
