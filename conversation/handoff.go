package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/realtime"
	xfer "switchboard/transfer"
)

// Transfers carries out the transfers that place a leg (bridged, warm,
// REFER with Replaces, auto) and holds callers (transfer.Service).
type Transfers interface {
	Prepare(ctx context.Context, c xfer.Call, r xfer.Request) (*xfer.Transfer, error)
	Hold(ctx context.Context, c xfer.Call, spec, voice string) error
	CheckHold(field, spec string) error
}

// Errors of the transfer and hold requests.
var (
	// ErrTransferRunning means another transfer of the call is in
	// progress.
	ErrTransferRunning = errors.New("conversation: a transfer of this call is in progress")
	// ErrNoTransfers means the call's conversation cannot hand its
	// caller on (the line test, or an appliance without transfers).
	ErrNoTransfers = errors.New("conversation: this call cannot be transferred or held")
	// ErrNotHeld means resume was asked of a call that is not on hold.
	ErrNotHeld = errors.New("conversation: the call is not on hold")
	// ErrHandedOff means the caller already talks with a human.
	ErrHandedOff = errors.New("conversation: the caller was handed to a human")
)

// requestWait bounds how long a request waits for the conversation's loop
// to take it: the loop turns every 20 ms, so a longer wait means the
// conversation is ending.
const requestWait = 5 * time.Second

// handoffOp is what a request asks of the conversation's loop.
type handoffOp int

const (
	opTransfer handoffOp = iota
	opHold
	opResume
)

// handoffCmd is a request of the API to the conversation's loop, which
// owns the call's routes while it runs.
type handoffCmd struct {
	op    handoffOp
	req   xfer.Request
	audio string
	reply chan handoffReply
}

type handoffReply struct {
	t   *xfer.Transfer
	err error
}

// handoffRun is the transfer in progress; callID is the model's function
// call when the agent's transfer_call tool started it.
type handoffRun struct {
	t      *xfer.Transfer
	callID string
}

// handoffEnd is a transfer's outcome, back in the loop.
type handoffEnd struct {
	run *handoffRun
	res xfer.Result
}

// errHandedOff makes Run hand the call to the human (handedOff).
var errHandedOff = errors.New("handed off")

// request hands cmd to the conversation's loop and waits for its answer.
func (b *bridge) request(ctx context.Context, cmd handoffCmd) (*xfer.Transfer, error) {
	if b.rt.opts.Transfers == nil {
		return nil, ErrNoTransfers
	}
	cmd.reply = make(chan handoffReply, 1)
	wait := time.NewTimer(requestWait)
	defer wait.Stop()
	select {
	case b.handoffs <- cmd:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.phone.Context().Done():
		return nil, call.ErrNotActive
	case <-b.runDone:
		return nil, call.ErrNotActive
	case <-wait.C:
		return nil, call.ErrNotActive
	}
	select {
	case r := <-cmd.reply:
		return r.t, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.phone.Context().Done():
		return nil, call.ErrNotActive
	}
}

// command carries out a request in the loop.
func (b *bridge) command(ctx context.Context, cmd handoffCmd) {
	var r handoffReply
	switch cmd.op {
	case opTransfer:
		r.t, r.err = b.startHandoff(ctx, cmd.req, "")
	case opHold:
		r.err = b.hold(ctx, cmd.audio)
	case opResume:
		r.err = b.resume()
	}
	cmd.reply <- r
}

// busyWith says why the caller cannot be handed on now (nil: free).
func (b *bridge) busyWith() error {
	switch {
	case b.human != nil:
		return ErrHandedOff
	case b.handoff != nil:
		return ErrTransferRunning
	}
	return nil
}

// away reports that the caller does not talk with the model now: held,
// being transferred, or bridged to a human (no idle check-in).
func (b *bridge) away() bool { return b.held || b.handoff != nil || b.human != nil }

// startHandoff prepares a transfer and runs it in the background: the
// caller holds (the model hears nothing meanwhile) and the outcome comes
// back to the loop (handoffEnded). callID is the function call of the
// agent's tool that asked for it ("" for the API).
func (b *bridge) startHandoff(ctx context.Context, req xfer.Request, callID string) (*xfer.Transfer, error) {
	if err := b.busyWith(); err != nil {
		return nil, err
	}
	if req.Voice == "" {
		req.Voice = b.cfg.Settings.Voice
	}
	t, err := b.rt.opts.Transfers.Prepare(ctx, b.phone, req)
	if err != nil {
		return nil, err
	}
	b.turns.interrupt(ctx)
	run := &handoffRun{t: t, callID: callID}
	b.handoff, b.held = run, false
	b.handoffDone.start()
	b.spawn("transfer", func() {
		res := t.Run(ctx, b)
		select {
		case b.handoffDone.ch <- handoffEnd{run: run, res: res}:
		case <-ctx.Done():
		}
		t.Wait()
	})
	return t, nil
}

// Update reports a transfer's step to the controller and the webhook of
// a controlled call (transfer.Reporter).
func (b *bridge) Update(u xfer.Update) {
	if r := b.reporter; r != nil {
		r.Update(u)
	}
}

// handoffEnded acts on a transfer's outcome: the call ends once the
// caller's side took it (referred); the call goes to the human once
// bridged (errHandedOff, unless the model keeps listening); otherwise the
// caller is back, and the model is told why so it says so.
func (b *bridge) handoffEnded(ctx context.Context, d handoffEnd) error {
	b.handoffDone.got()
	b.handoff = nil
	b.turns.quiet()
	res, req := d.res, d.run.t.Request()
	switch res.Status {
	case xfer.StatusReferred:
		return call.Hangup("transferred")
	case xfer.StatusCallerLeft:
		return nil
	case xfer.StatusBridged:
		b.human = res.Human
		if !req.KeepListening {
			return errHandedOff
		}
		b.listenOnly(ctx)
		if d.run.callID != "" {
			b.tools.output(ctx, d.run.callID, agent.ToolTransferCall, `{"transferred":true,"status":"bridged"}`, false)
		}
		return nil
	}
	msg := fmt.Sprintf("The transfer to %s did not go through: %s", req.TargetURI, res.Status)
	if res.Reason != "" {
		msg += " (" + res.Reason + ")"
	}
	msg += ". The caller is back on the line with you: tell them."
	if d.run.callID != "" {
		out, _ := json.Marshal(map[string]any{"transferred": false, "status": string(res.Status), "reason": res.Reason, "message": msg})
		b.tools.output(ctx, d.run.callID, agent.ToolTransferCall, string(out), true)
		return nil
	}
	b.tell(ctx, msg)
	return nil
}

// tell adds a system message to the model's conversation and asks it to
// answer it.
func (b *bridge) tell(ctx context.Context, text string) {
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "told the model", Data: map[string]string{"text": text}})
	it := realtime.Item{Type: realtime.ItemMessage, Role: realtime.RoleSystem,
		Content: []realtime.ContentPart{{Type: realtime.ContentInputText, Text: text}}}
	b.send(ctx, &realtime.ConversationItemCreate{Item: it})
	b.send(ctx, &realtime.ResponseCreate{})
}

// listenOnly keeps the model session of a bridged call for its
// transcript: it hears the caller and no longer answers.
func (b *bridge) listenOnly(ctx context.Context) {
	off := false
	td := realtime.TurnDetection{Type: realtime.TurnServerVAD, CreateResponse: &off, InterruptResponse: &off}
	b.send(ctx, &realtime.SessionUpdate{Session: realtime.SessionConfig{Type: "realtime",
		Audio: &realtime.AudioConfig{Input: &realtime.AudioInput{TurnDetection: realtime.Some(td)}}}})
	b.log.Info().Msg("caller bridged to a human: the model keeps listening, silent")
}

// humanGone is closed when the human the caller is bridged to hangs up
// (nil before a bridge).
func (b *bridge) humanGone() <-chan struct{} {
	if b.human == nil {
		return nil
	}
	return b.human.Leg().Context().Done()
}

// handedOff is the rest of a call whose caller talks with a human: the
// model session is closed, and the call ends with either of them.
func (b *bridge) handedOff(ctx context.Context, s realtime.Session) error {
	if err := s.Close(); err != nil {
		b.log.Debug().Err(err).Msg("model session close")
	}
	b.log.Info().Msg("caller bridged to a human: the model session is closed")
	gone := b.humanGone()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-gone:
			return call.Hangup("the transfer target hung up")
		case cmd := <-b.handoffs:
			cmd.reply <- handoffReply{err: ErrHandedOff}
		}
	}
}

// hold puts the caller on hold with audio (the model hears nothing).
func (b *bridge) hold(ctx context.Context, audio string) error {
	if err := b.busyWith(); err != nil {
		return err
	}
	if err := b.rt.opts.Transfers.CheckHold("audio", audio); err != nil {
		return err
	}
	if err := b.rt.opts.Transfers.Hold(ctx, b.phone, audio, b.cfg.Settings.Voice); err != nil {
		return err
	}
	b.turns.interrupt(ctx)
	b.held = true
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "hold", Data: map[string]string{"audio": audio}})
	return nil
}

// resume takes the caller off hold.
func (b *bridge) resume() error {
	if err := b.busyWith(); err != nil {
		return err
	}
	if !b.held {
		return ErrNotHeld
	}
	if err := xfer.Resume(b.phone); err != nil {
		return err
	}
	b.held = false
	b.turns.quiet()
	b.phone.Note(call.Note{Kind: call.NoteEvent, Text: "resume"})
	return nil
}
