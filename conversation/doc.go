// Package conversation owns the model side of a call: everything between
// the caller's audio and a realtime session (package realtime).
//
//   - Router (a call.Router) picks each call's conversation from the route
//     admission resolved, with no store read but the agent's record: an
//     agent's bridge, the "loopback" line test, or a Controlled
//     conversation for a webhook-routed number. Every routed call is in the
//     Registry until its conversation closes; the API steers calls through
//     it (Routed: transfer, hangup, dtmf, a controller's socket).
//   - Runtime makes agents' conversations: the bridge opens and configures
//     the session while the phone rings, queues the cached greeting before
//     the answer, then owns the call in one goroutine (barge-in with
//     truncate, tools transfer_call / end_call / send_dtmf and custom HTTP
//     tools, the comfort prompt, idle check-in, maximum duration, one
//     reconnect, the refuse-or-apologize fallback, the STT transcript
//     fallback).
//   - Controlled is the conversation of a webhook-routed call: the same
//     bridge steered by a controller over /v1/realtime?call_id=. While the
//     caller hears ringing it POSTs realtime.call.incoming (signed, retried
//     inside the ring window, each attempt noted in the call record), waits
//     for a controller (480 after the ring timeout), then opens the model
//     session; a dropped controller leaves the call running for the grace
//     time. realtime.call.transfer and realtime.call.ended go to the same
//     webhook.
//
// Audio crosses a conversation in its media.Format: PCM16 at 24 kHz,
// or the phone's own G.711 bytes when the provider speaks audio/pcmu or
// audio/pcma (the call passes them through untouched). Audio rendered
// locally (greetings, prompts, tones) is PCM16 at the format's rate and
// goes through Phone.PlayPCM.
//
// Dependencies arrive at construction as small interfaces declared here:
// Agents (agent records), Greeter, Transcriber, ToolCaller, Webhooks.
package conversation
