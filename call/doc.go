// Package call is where a phone call and its conversation meet: one Call
// per INVITE, owned by the goroutine that took it, joining the SIP dialog
// (package sip), the RTP media (package media), the DTMF logic (package
// dtmf) and the conversation on the other side (the model session, a
// controller's session, or the line-test echo).
//
// The media path of a call:
//
//	RTP in -> PCMU(decode) -> Jitter -> Resample(8k->24k) -> PCM16LE -> Conversation.Audio
//	Phone.Play -> PCM16LE -> Resample(24k->8k) -> Playout -> Pacer -> PCMU(encode) -> RTP out
//
// The Manager implements sip.Handler: it keeps the registry of live calls
// that the HTTP API reads and steers, and the call metrics.
package call
