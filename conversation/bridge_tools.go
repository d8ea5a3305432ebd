package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"switchboard/agent"
	"switchboard/media"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/realtime"
)

// spawnFunc runs f in a goroutine the conversation owns (Close waits for
// it; a panic ends only this call); where names it in the log.
type spawnFunc func(where string, f func())

// tools runs what the model calls that takes time (Run goroutine): the
// send_dtmf tool and the agent's custom tools, each in its own goroutine
// whose result comes back on done, and the comfort the caller hears while
// anything is busy (a tool, a transfer): after the comfort delay, the
// comfort prompt once per busy spell (when rendered), then a soft tone.
type tools struct {
	speaker  call.Speaker
	controls call.Controls
	record   call.Record
	send     sendFunc
	spawn    spawnFunc
	log      zerolog.Logger
	// caller runs custom tools (nil: they answer an error); callID and
	// vars go with each call.
	caller ToolCaller
	callID string
	vars   agent.Vars
	// delay is how long something may be busy before the caller hears
	// the comfort (RuntimeOptions.ComfortDelay).
	delay time.Duration
	rate  int // of the comfort tone and prompt (PCM16)

	done        inflight[toolResult]
	busy        int
	busySince   time.Time
	said        bool      // the comfort prompt was said in this busy spell
	promptUntil time.Time // the comfort prompt plays until then
	prompt      *prompt   // nil: no comfort prompt (tone only)
	tone        []byte
}

type toolResult struct {
	callID, name, output string
}

// toolQueue is how many finished tools may wait for the loop.
const toolQueue = 8

func newTools(sp call.Speaker, ctl call.Controls, rec call.Record, send sendFunc, spawn spawnFunc, log zerolog.Logger) *tools {
	return &tools{speaker: sp, controls: ctl, record: rec, send: send, spawn: spawn, log: log, done: newInflight[toolResult](toolQueue)}
}

// sendDTMF presses keys on the caller's side (the send_dtmf tool).
func (t *tools) sendDTMF(ctx context.Context, callID, arguments string, now time.Time) {
	var args struct {
		Digits string `json:"digits"`
	}
	_ = json.Unmarshal([]byte(arguments), &args)
	t.done.start()
	t.spawn("send_dtmf tool", func() {
		out := `{"ok":true}`
		if err := t.controls.SendDTMF(ctx, args.Digits); err != nil {
			out = errorJSON(err.Error())
		}
		select {
		case t.done.ch <- toolResult{callID: callID, name: agent.ToolSendDTMF, output: out}:
		case <-ctx.Done():
		}
	})
	t.busyStart(now)
}

// run calls a custom tool in its own goroutine with its timeout; the
// result comes back on done.
func (t *tools) run(ctx context.Context, tool agent.Tool, callID, args string, now time.Time) {
	t.busyStart(now)
	timeout := time.Duration(tool.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = agent.DefaultToolTimeout * time.Millisecond
	}
	t.done.start()
	t.spawn("tool", func() {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var out string
		var err error
		if t.caller == nil {
			err = errors.New("custom tools are not configured on this appliance")
		} else {
			out, err = t.caller.CallTool(tctx, tool, ToolCall{ID: callID, PhoneCallID: t.callID, Arguments: args, Variables: t.vars})
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("the tool did not answer within %s", timeout)
			}
			out = errorJSON(err.Error())
		}
		select {
		case t.done.ch <- toolResult{callID: callID, name: tool.Name, output: out}:
		case <-ctx.Done():
		}
	})
}

// finished returns a tool's result to the model and asks for the answer
// that uses it; responding says a response is running (the comfort's end
// then leaves the playout alone).
func (t *tools) finished(ctx context.Context, r toolResult, responding bool, now time.Time) {
	t.done.got()
	t.busyEnd(responding, now)
	t.output(ctx, r.callID, r.name, r.output, true)
}

// output returns a function's result to the model and, when respond is
// set, asks for the answer that uses it.
func (t *tools) output(ctx context.Context, callID, name, out string, respond bool) {
	functionOutput(ctx, t.send, t.record, callID, name, out, respond)
}

// functionOutput notes a function's result, hands it to the model and,
// when respond is set, asks for the answer that uses it.
func functionOutput(ctx context.Context, send sendFunc, rec call.Record, callID, name, out string, respond bool) {
	rec.Note(call.Note{Kind: call.NoteToolResult, Text: name, Data: map[string]string{"call_id": callID, "output": out}})
	send(ctx, &realtime.ConversationItemCreate{Item: realtime.FunctionCallOutput(callID, out)})
	if respond {
		send(ctx, &realtime.ResponseCreate{})
	}
}

// busyStart counts a tool, keypad send or transfer in progress; the first
// one starts the comfort delay.
func (t *tools) busyStart(now time.Time) {
	if t.busy == 0 {
		t.busySince = now
		t.said = false
	}
	t.busy++
}

// busyEnd ends one; once none is left the comfort tone stops (a comfort
// prompt being said is let finish, and so is a response).
func (t *tools) busyEnd(responding bool, now time.Time) {
	if t.busy > 0 {
		t.busy--
	}
	if t.busy == 0 && !responding && !now.Before(t.promptUntil) {
		t.speaker.Flush() // the comfort tone
	}
}

// comfortDue fills the wait of a slow tool once the comfort delay passed
// and the playout is nearly empty: the comfort prompt once per busy spell
// (when it is rendered), then the soft tone pattern.
func (t *tools) comfortDue(now time.Time) {
	if t.busy == 0 || now.Sub(t.busySince) < t.delay || t.speaker.Pending() >= 2*tick {
		return
	}
	if !t.said {
		t.said = true
		if pcm := t.prompt.ready(); pcm != nil {
			t.speaker.PlayPCM(comfortPromptItem, pcm)
			t.promptUntil = now.Add(t.speaker.Pending())
			t.record.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: t.prompt.text})
			return
		}
	}
	t.speaker.PlayPCM(comfortItem, t.comfortTone())
}

// comfortTone is 200 ms of a soft 440 Hz tone with a gentle fade, then
// 800 ms of silence: what a caller hears while a tool runs.
func (t *tools) comfortTone() []byte {
	if t.tone == nil {
		t.tone = append(tone(t.rate, 440, 0.2, 0.03), make([]byte, t.rate*2*8/10)...)
	}
	return t.tone
}

func errorJSON(msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg}})
	return string(b)
}

// tone renders secs of a sine at freq and amplitude amp (0..1) as PCM16LE,
// with 10 ms fades.
func tone(rate int, freq, secs, amp float64) []byte {
	n := int(float64(rate) * secs)
	out := make([]int16, n)
	fade := rate / 100
	for i := 0; i < n; i++ {
		g := amp
		if i < fade {
			g *= float64(i) / float64(fade)
		} else if n-i < fade {
			g *= float64(n-i) / float64(fade)
		}
		out[i] = int16(g * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return media.AppendPCM16LE(nil, out)
}
