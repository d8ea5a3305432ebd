package conversation

import (
	"context"
	"switchboard/agent"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	xfer "switchboard/transfer"
)

// transfer is the transfer_call tool (Run goroutine): the model chose a
// target; once the assistant finished its sentence the caller hears the
// transfer announcement (when rendered), then, once it played out, the
// REFER goes in its own goroutine and its outcome comes back on done:
// success ends the call, failure keeps it and tells the model. A target
// with a mode (bridge, warm, refer, auto) is handed to handoff instead,
// which runs it through the transfer service (handoff.go).
type transfer struct {
	speaker  call.Speaker
	controls call.Controls
	record   call.Record
	send     sendFunc
	spawn    spawnFunc
	log      zerolog.Logger
	// targets are the agent's; headers renders a target's headers with
	// the call's variables.
	targets []agent.TransferTarget
	headers func(agent.TransferTarget) []call.Header
	// handoff starts a transfer that places a leg (the bridge's
	// startHandoff).
	handoff func(ctx context.Context, req xfer.Request, callID string) (*xfer.Transfer, error)

	announce *prompt // nil: no transfer announcement
	pending  *pendingTransfer
	done     inflight[error]
}

type pendingTransfer struct {
	callID, target, uri string
	headers             []call.Header // rendered with the call's variables
	announced, started  bool
	// handoff, when set, is a transfer that places a leg (a target with
	// a mode): it runs through the transfer service, not a bare REFER.
	handoff *xfer.Request
}

func newTransfer(sp call.Speaker, ctl call.Controls, rec call.Record, send sendFunc, spawn spawnFunc, log zerolog.Logger) *transfer {
	return &transfer{speaker: sp, controls: ctl, record: rec, send: send, spawn: spawn, log: log, done: newInflight[error](1)}
}

// request takes the model's choice of target (the function call callID)
// and its summary for the human; false when the agent has no such
// target.
func (t *transfer) request(callID, target, summary string) bool {
	for _, tt := range t.targets {
		if tt.Name == target {
			var hs []call.Header
			if t.headers != nil {
				hs = t.headers(tt)
			}
			t.pending = &pendingTransfer{callID: callID, target: tt.Name, uri: tt.URI, headers: hs, handoff: handoffOf(tt, summary, hs)}
			return true
		}
	}
	return false
}

// due reports a transfer waiting for the assistant to finish.
func (t *transfer) due() bool { return t.pending != nil && !t.pending.started }

// step runs once the assistant finished its sentence: first the transfer
// announcement (from the cache), then, once it played out, the REFER. It
// reports whether the REFER started (the call is busy until its outcome).
func (t *transfer) step(ctx context.Context) bool {
	p := t.pending
	if !p.announced {
		if t.announce != nil && !t.announce.settled() {
			return false // still rendering (bounded by promptRenderTimeout)
		}
		p.announced = true
		if pcm := t.announce.ready(); pcm != nil {
			t.speaker.PlayPCM(announceItem, pcm)
			t.record.Note(call.Note{Kind: call.NoteTranscript, Role: "assistant", Text: t.announce.text})
			return false // the REFER follows once it played out
		}
	}
	p.started = true
	if p.handoff != nil {
		t.pending = nil
		if _, err := t.handoff(ctx, *p.handoff, p.callID); err != nil {
			t.log.Warn().Err(err).Str("target", p.target).Msg("transfer not started")
			functionOutput(ctx, t.send, t.record, p.callID, agent.ToolTransferCall, errorJSON("the transfer could not start: "+err.Error()), true)
		}
		return false // the caller holds: no comfort tone
	}
	t.record.Note(call.Note{Kind: call.NoteTransfer, Text: p.uri, Data: map[string]string{"target": p.target}})
	t.log.Info().Str("target_uri", p.uri).Msg("transferring the call")
	uri, hs := p.uri, p.headers
	t.done.start()
	t.spawn("transfer", func() {
		err := t.controls.Transfer(ctx, uri, nil, hs...)
		select {
		case t.done.ch <- err:
		case <-ctx.Done():
		}
	})
	return true
}

// failed keeps the call and tells the model its transfer failed.
func (t *transfer) failed(ctx context.Context, err error) {
	p := t.pending
	t.pending = nil
	t.log.Warn().Err(err).Msg("transfer failed")
	t.record.Note(call.Note{Kind: call.NoteTransfer, Text: "failed: " + err.Error()})
	if p != nil {
		functionOutput(ctx, t.send, t.record, p.callID, agent.ToolTransferCall, errorJSON("the transfer failed: "+err.Error()), true)
	}
}

// handoffOf is the transfer an agent's target asks for with the model's
// summary in its briefing and the target's rendered headers; nil for a
// target without a mode (a bare REFER).
func handoffOf(t agent.TransferTarget, summary string, headers []call.Header) *xfer.Request {
	if t.Mode == "" {
		return nil
	}
	briefing := t.Briefing
	if summary != "" && (t.Mode == string(xfer.ModeWarm) || t.Mode == string(xfer.ModeRefer)) {
		if briefing != "" {
			briefing += " "
		}
		briefing += summary
	}
	if len([]rune(briefing)) > xfer.MaxBriefing {
		briefing = string([]rune(briefing)[:xfer.MaxBriefing])
	}
	return &xfer.Request{TargetURI: t.URI, Mode: xfer.Mode(t.Mode), Replaces: t.Replaces, Briefing: briefing,
		HoldAudio: t.HoldAudio, Accept: xfer.Accept(t.Accept), Timeout: time.Duration(t.TimeoutS) * time.Second,
		Headers: headers, KeepListening: t.KeepListening, By: "agent"}
}
