package conversation

import (
	"context"
	"errors"

	"switchboard/call"
	"switchboard/stream"
)

// Errors of SendToStream.
var (
	// ErrStreamed means the call already went to a stream (or is going).
	ErrStreamed = errors.New("conversation: the call already went to a stream")
)

// SendToStream hands a webhook-routed call to a bot's stream: it dials
// the bot now (bounded by the connect timeout). A ringing call is
// answered once the stream is open; an answered call's model session
// closes and the bot takes over the caller, its controller is let go.
// A bot that cannot be reached leaves the call as it was and returns the
// error (stream.ErrUnreachable).
func (cc *Controlled) SendToStream(ctx context.Context, target call.StreamTarget) (*stream.Stream, error) {
	cc.mu.Lock()
	switch {
	case cc.closed || cc.endReason != "":
		cc.mu.Unlock()
		return nil, ErrCallOver
	case cc.streaming:
		cc.mu.Unlock()
		return nil, ErrStreamed
	}
	cc.streaming = true
	cc.mu.Unlock()
	// The call's format, resolved when its media started: the bridge's
	// own may still be the leg's placeholder (an echo engine's follows
	// the caller), adopted only once a controller's session opens.
	st, err := cc.b.rt.Stream(cc.phone, target, cc.phone.Format())
	if err == nil {
		if err = st.Connect(ctx); err != nil {
			_ = st.Close()
		}
	}
	cc.mu.Lock()
	if err == nil && (cc.closed || cc.endReason != "") {
		err = ErrCallOver
		_ = st.Close()
	}
	if err != nil {
		cc.streaming = false
		cc.mu.Unlock()
		return nil, err
	}
	cc.handed.Store(st)
	stop, cur := cc.stop, cc.cur
	cc.cur = nil
	cc.mu.Unlock()
	cc.phone.Note(call.Note{Kind: call.NoteEvent, Text: "the controller sent the call to a stream", Data: map[string]any{"stream_sid": st.SID()}})
	cc.log.Info().Str("stream_sid", st.SID()).Msg("call sent to a stream")
	if cur != nil {
		cur.deliver(cc.custom(EventCallStream, map[string]any{"stream_sid": st.SID()}))
		cur.end("the call went to a stream")
	}
	cc.streamOnce.Do(func() { close(cc.streamed) })
	if stop != nil {
		stop() // an answered call: the bridge's Run ends, Run goes on with the stream
	}
	return st, nil
}

// EventCallStream tells the controller its call went to a bot's stream
// (the controller's session ends after it):
//
//	{"type":"switchboard.call.stream", "event_id":…, "call_id":…, "stream_sid":"MZ…"}
const EventCallStream = "switchboard.call.stream"

// runStream runs the call with the bot that took it: the model session
// closes, its audio still queued is dropped, and the call goes on until
// it or the bot ends (or the API hangs up).
func (cc *Controlled) runStream(ctx context.Context, h *stream.Stream) error {
	if s := cc.b.session(); s != nil {
		_ = s.Close()
	}
	cc.phone.Flush()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cc.mu.Lock()
	cc.stop = cancel
	reason := cc.endReason
	cc.mu.Unlock()
	if reason != "" {
		return call.Hangup(reason)
	}
	err := h.Run(sctx)
	cc.mu.Lock()
	reason = cc.endReason
	cc.mu.Unlock()
	if reason != "" && ctx.Err() == nil {
		return call.Hangup(reason)
	}
	return err
}
