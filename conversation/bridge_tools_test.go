package conversation

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/realtime"
)

// toolCallerFunc is a ToolCaller of a function.
type toolCallerFunc func(ctx context.Context, t agent.Tool, c ToolCall) (string, error)

func (f toolCallerFunc) CallTool(ctx context.Context, t agent.Tool, c ToolCall) (string, error) {
	return f(ctx, t, c)
}

func newTestTools(spawn spawnFunc) (*tools, *speakerRec, *controlsRec, *recordRec, *sentRec) {
	sp, ctl, rec, sent := &speakerRec{}, &controlsRec{}, &recordRec{}, &sentRec{}
	tl := newTools(sp, ctl, rec, sent.send, spawn, zerolog.Nop())
	tl.callID, tl.delay, tl.rate = "call-1", time.Second, 8000
	return tl, sp, ctl, rec, sent
}

// TestToolsCustom: a custom tool gets the call's ids, arguments and
// variables; its answer goes back to the model as the function's output
// with a response.create, and is noted; a tool that does not answer within
// its timeout, or no tool caller at all, answers an error.
func TestToolsCustom(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(3000, 0)
	tl, sp, _, rec, sent := newTestTools(spawnNow)
	tl.vars = agent.Vars{"plan": "gold"}
	var got ToolCall
	tl.caller = toolCallerFunc(func(_ context.Context, tool agent.Tool, c ToolCall) (string, error) {
		got = c
		return `{"balance":12}`, nil
	})
	tl.run(ctx, agent.Tool{Name: "balance"}, "fc_1", `{"acct":"7"}`, now)
	require.Equal(t, ToolCall{ID: "fc_1", PhoneCallID: "call-1", Arguments: `{"acct":"7"}`, Variables: agent.Vars{"plan": "gold"}}, got)
	r := <-tl.done.ch
	require.Equal(t, toolResult{callID: "fc_1", name: "balance", output: `{"balance":12}`}, r)
	tl.finished(ctx, r, false, now.Add(100*time.Millisecond))
	evs := sent.take()
	require.Equal(t, []string{realtime.TypeConversationItemCreate, realtime.TypeResponseCreate}, typesOf(evs))
	out := evs[0].(*realtime.ConversationItemCreate).Item
	require.Equal(t, realtime.ItemFunctionCallOutput, out.Type)
	require.Equal(t, "fc_1", out.CallID)
	require.Equal(t, `{"balance":12}`, out.Output)
	require.Equal(t, []string{call.NoteToolResult + ": balance"}, rec.lines())
	require.Equal(t, 1, sp.flushed(), "the comfort tone stops with the last busy tool")

	tl.caller = nil
	tl.run(ctx, agent.Tool{Name: "balance"}, "fc_2", `{}`, now)
	require.Contains(t, (<-tl.done.ch).output, "custom tools are not configured")

	synctest.Test(t, func(t *testing.T) {
		tl, _, _, _, _ := newTestTools(spawnNow)
		tl.caller = toolCallerFunc(func(ctx context.Context, _ agent.Tool, _ ToolCall) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})
		start := time.Now()
		tl.run(context.Background(), agent.Tool{Name: "slow", TimeoutMS: 1500}, "fc_3", `{}`, start)
		r := <-tl.done.ch
		require.Equal(t, 1500*time.Millisecond, time.Since(start), "the tool's own timeout")
		require.JSONEq(t, `{"error":{"message":"the tool did not answer within 1.5s"}}`, r.output)
	})
}

// TestToolsSendDTMF: send_dtmf presses the model's digits on the call and
// answers ok, or the error of the send.
func TestToolsSendDTMF(t *testing.T) {
	ctx := context.Background()
	tl, _, ctl, _, _ := newTestTools(spawnNow)
	tl.sendDTMF(ctx, "fc_1", `{"digits":"12#"}`, time.Now())
	require.Equal(t, toolResult{callID: "fc_1", name: agent.ToolSendDTMF, output: `{"ok":true}`}, <-tl.done.ch)
	ctl.dtmfErr = errors.New("no dtmf on this leg")
	tl.sendDTMF(ctx, "fc_2", `{"digits":"9"}`, time.Now())
	require.JSONEq(t, `{"error":{"message":"no dtmf on this leg"}}`, (<-tl.done.ch).output)
	_, _, digits := ctl.snapshot()
	require.Equal(t, []string{"12#", "9"}, digits)
	require.Equal(t, 2, tl.busy, "busy until the loop takes the results")
}

// TestToolsComfort: a tool busy past the comfort delay gets the comfort
// prompt once per busy spell (noted as the assistant's line), then the
// tone whenever the playout runs low; the last tool's end stops the tone
// but lets the prompt and a running response finish.
func TestToolsComfort(t *testing.T) {
	t0 := time.Unix(4000, 0)
	tl, sp, _, rec, _ := newTestTools(spawnNow)
	tl.prompt = &prompt{text: "One moment.", done: make(chan struct{})}
	pcm := make([]byte, 1600)
	tl.prompt.pcm.Store(&pcm)
	close(tl.prompt.done)

	tl.comfortDue(t0)
	require.Empty(t, sp.played(), "nothing is busy")
	tl.busyStart(t0)
	tl.busyStart(t0.Add(500 * time.Millisecond)) // a second one does not restart the delay
	tl.comfortDue(t0.Add(999 * time.Millisecond))
	require.Empty(t, sp.played())
	sp.perPlay = time.Second // what the prompt queues
	tl.comfortDue(t0.Add(time.Second))
	sp.perPlay = 0
	require.Equal(t, []string{comfortPromptItem}, sp.played())
	require.Equal(t, []string{call.NoteTranscript + "/assistant: One moment."}, rec.lines())
	tl.comfortDue(t0.Add(1500 * time.Millisecond))
	require.Len(t, sp.played(), 1, "the playout is not low yet")
	sp.pending = 39 * time.Millisecond
	tl.comfortDue(t0.Add(2 * time.Second))
	require.Equal(t, []string{comfortPromptItem, comfortItem}, sp.played())
	require.Len(t, tl.comfortTone(), 8000*2, "200 ms of tone and 800 ms of silence")

	tl.busyEnd(false, t0.Add(1500*time.Millisecond))
	tl.busyEnd(false, t0.Add(1900*time.Millisecond))
	require.Zero(t, sp.flushed(), "the prompt is let finish")

	// The next spell says the prompt again; a response running keeps the
	// playout at the spell's end.
	sp.pending = 0
	tl.busyStart(t0.Add(10 * time.Second))
	tl.comfortDue(t0.Add(11 * time.Second))
	require.Equal(t, comfortPromptItem, sp.played()[2])
	tl.busyEnd(true, t0.Add(20*time.Second))
	require.Zero(t, sp.flushed())
	tl.busyStart(t0.Add(30 * time.Second))
	tl.busyEnd(false, t0.Add(30*time.Second))
	require.Equal(t, 1, sp.flushed(), "the tone stops")
	tl.busyEnd(false, t0.Add(31*time.Second))
	require.Zero(t, tl.busy, "never below zero")

	// Without a rendered prompt: the tone at once.
	tl2, sp2, _, rec2, _ := newTestTools(spawnNow)
	tl2.busyStart(t0)
	tl2.comfortDue(t0.Add(time.Second))
	require.Equal(t, []string{comfortItem}, sp2.played())
	require.Empty(t, rec2.lines())
}
