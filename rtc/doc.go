// Package rtc owns browser calls: a call.Leg over a WebRTC peer
// connection (pion/webrtc) that the call manager runs like a phone's,
// with Opus (or PCMU, the fallback a browser also offers) over DTLS-SRTP
// and the realtime events on the "oai-events" data channel.
//
// A browser POSTs its SDP offer (control's /v1/realtime/calls); Server.Call
// negotiates it at once (ICE host candidates on the configured address,
// rewritten to the public address behind a 1:1 NAT, UDP ports from the
// configured range, no trickle: the answer carries every candidate), hands
// the leg to the manager and returns the answer when the call's
// conversation is ready, or the refusal.
//
//	browser Opus/RTP -> SRTP -> Leg (decode at 24 kHz) -> call audio path -> Conversation
//	Conversation -> call audio path -> Playout(24 kHz) -> 20 ms sender (Opus encode) -> SRTP
//	"oai-events" <-> the conversation's event channel (a controller's session
//	                 for a direct session, the agent's events for an agent)
package rtc
