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

	"switchboard/call"
	"switchboard/realtime"
)

// functionCall runs a tool the model called.
func (b *bridge) functionCall(ctx context.Context, s realtime.Session, e *realtime.ResponseFunctionCallArgumentsDone) {
	b.phone.Note(call.Note{Kind: call.NoteToolCall, Text: e.Name, Data: map[string]string{"call_id": e.CallID, "arguments": e.Arguments}})
	if b.external {
		return // the controller runs its own tools
	}
	switch e.Name {
	case agent.ToolEndCall:
		var args struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		reason := "agent ended the call"
		if args.Reason != "" {
			reason += ": " + args.Reason
		}
		b.endReason = reason
		b.idleAt = time.Time{}
		b.output(ctx, s, e.CallID, e.Name, `{"ok":true}`, false)
	case agent.ToolSendDTMF:
		var args struct {
			Digits string `json:"digits"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer contain(b.log, b.phone, "send_dtmf tool")
			out := `{"ok":true}`
			if err := b.phone.SendDTMF(ctx, args.Digits); err != nil {
				out = errorJSON(err.Error())
			}
			select {
			case b.toolDone <- toolResult{callID: e.CallID, name: agent.ToolSendDTMF, output: out}:
			case <-ctx.Done():
			}
		}()
		b.busyStart()
	case agent.ToolTransferCall:
		var args struct {
			Target string `json:"target"`
		}
		_ = json.Unmarshal([]byte(e.Arguments), &args)
		for _, t := range b.cfg.Settings.TransferTargets {
			if t.Name == args.Target {
				b.transferTo = &pendingTransfer{callID: e.CallID, target: t.Name, uri: t.URI, headers: b.targetHeaders(t)}
				b.idleAt = time.Time{}
				return
			}
		}
		b.output(ctx, s, e.CallID, e.Name, errorJSON("unknown transfer target "+args.Target), true)
	default:
		for _, t := range b.cfg.Settings.Tools {
			if t.Name == e.Name {
				b.runTool(ctx, t, e.CallID, e.Arguments)
				return
			}
		}
		b.output(ctx, s, e.CallID, e.Name, errorJSON("unknown tool "+e.Name), true)
	}
}

// runTool calls a custom tool in its own goroutine with its timeout; the
// result comes back on toolDone.
func (b *bridge) runTool(ctx context.Context, t agent.Tool, callID, args string) {
	b.busyStart()
	timeout := time.Duration(t.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = agent.DefaultToolTimeout * time.Millisecond
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer contain(b.log, b.phone, "tool")
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var out string
		var err error
		if b.rt.opts.Tools == nil {
			err = errors.New("custom tools are not configured on this appliance")
		} else {
			out, err = b.rt.opts.Tools.CallTool(tctx, t, ToolCall{ID: callID, PhoneCallID: b.phone.ID(), Arguments: args, Variables: b.vars})
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("the tool did not answer within %s", timeout)
			}
			out = errorJSON(err.Error())
		}
		select {
		case b.toolDone <- toolResult{callID: callID, name: t.Name, output: out}:
		case <-ctx.Done():
		}
	}()
}

func (b *bridge) toolFinished(ctx context.Context, s realtime.Session, r toolResult) {
	b.busyEnd()
	b.output(ctx, s, r.callID, r.name, r.output, true)
}

// output returns a function's result to the model and, when respond is
// set, asks for the answer that uses it.
func (b *bridge) output(ctx context.Context, s realtime.Session, callID, name, out string, respond bool) {
	b.phone.Note(call.Note{Kind: call.NoteToolResult, Text: name, Data: map[string]string{"call_id": callID, "output": out}})
	b.send(ctx, s, &realtime.ConversationItemCreate{Item: realtime.FunctionCallOutput(callID, out)})
	if respond {
		b.send(ctx, s, &realtime.ResponseCreate{})
	}
}

// transferStep runs once the assistant finished its sentence: first the
// transfer announcement (from the cache), then, once it played out, the
// REFER.
func (b *bridge) transferStep(ctx context.Context, t *pendingTransfer) {
	if !t.announced {
		if b.announce != nil && !b.announce.settled() {
			return // still rendering (bounded by promptRenderTimeout)
		}
		t.announced = true
		if pcm := b.announce.ready(); pcm != nil {
			b.phone.PlayPCM(announceItem, pcm)
			b.phone.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: b.announce.text})
			return // the REFER follows once it played out
		}
	}
	t.started = true
	b.startTransfer(ctx, t)
}

// startTransfer sends the REFER once the assistant finished its sentence
// and the transfer announcement played out.
func (b *bridge) startTransfer(ctx context.Context, t *pendingTransfer) {
	b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: t.uri, Data: map[string]string{"target": t.target}})
	b.log.Info().Str("target_uri", t.uri).Msg("transferring the call")
	b.busyStart()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer contain(b.log, b.phone, "transfer")
		err := b.phone.Transfer(ctx, t.uri, nil, t.headers...)
		select {
		case b.transferErr <- err:
		case <-ctx.Done():
		}
	}()
}

// transferFailed keeps the call and tells the model.
func (b *bridge) transferFailed(ctx context.Context, s realtime.Session, err error) {
	t := b.transferTo
	b.transferTo = nil
	b.busyEnd()
	b.log.Warn().Err(err).Msg("transfer failed")
	b.phone.Note(call.Note{Kind: call.NoteTransfer, Text: "failed: " + err.Error()})
	if t != nil {
		b.output(ctx, s, t.callID, agent.ToolTransferCall, errorJSON("the transfer failed: "+err.Error()), true)
	}
}

func errorJSON(msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg}})
	return string(b)
}

// comfortTone is 200 ms of a soft 440 Hz tone with a gentle fade, then
// 800 ms of silence: what a caller hears while a tool runs.
func (b *bridge) comfortTone() []byte {
	if b.comfort == nil {
		rate := b.format.Rate
		b.comfort = append(tone(rate, 440, 0.2, 0.03), make([]byte, rate*2*8/10)...)
	}
	return b.comfort
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
