package conversation

import (
	"context"
	"errors"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
	"switchboard/stream"
)

// errNoStreams refuses a stream-routed call on a runtime without streams.
var errNoStreams = errors.New("conversation: streams are not configured")

// Stream returns the conversation of the call on p with the bot of
// target, in format f (the zero Format: the µ-law the Twilio protocol
// carries, passed through for a µ-law caller). A target naming a fallback
// agent hands the call to that agent when the bot is unreachable or
// leaves.
func (r *Runtime) Stream(p call.Phone, target call.StreamTarget, f media.Format) (*stream.Stream, error) {
	if r.opts.Streams == nil {
		return nil, &call.RejectError{Status: 503, Reason: "Service Unavailable", Err: errNoStreams}
	}
	var fb stream.Fallback
	if target.FallbackAgentID != "" {
		fb = streamFallback{rt: r, id: target.FallbackAgentID, p: p}
	}
	return r.opts.Streams.New(p, target, f, fb), nil
}

// streamFallback is the agent a stream hands its call to (stream.Fallback).
type streamFallback struct {
	rt *Runtime
	id string
	p  call.Phone
}

// Conversation returns the agent's conversation in the stream's format:
// its bridge opens the model session in that format (µ-law for a Twilio
// stream), so the call's audio needs no conversion when it changes hands.
func (f streamFallback) Conversation(ctx context.Context, format media.Format) (call.Conversation, error) {
	cfg, err := f.rt.agents.Load(ctx, f.id)
	if err != nil {
		return nil, err
	}
	if cfg.Settings.Engine == agent.EngineLoopback {
		lb := NewLoopback(f.p, 0)
		lb.Record = cfg.Settings.Recording.On()
		return lb, nil
	}
	return newBridgeIn(f.rt, cfg, f.p, f.p.Logger().With().Str("agent_id", cfg.ID).Str("role", "stream fallback").Logger(),
		realtimeFormat(format)), nil
}

// realtimeFormat is the realtime audio format of a call's format.
func realtimeFormat(f media.Format) string {
	switch f.Encoding {
	case media.EncodingPCMU:
		return realtime.FormatPCMU
	case media.EncodingPCMA:
		return realtime.FormatPCMA
	}
	return realtime.FormatPCM
}
