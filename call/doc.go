// Package call is where the phone side and the model side of a call meet.
// One Call per admitted call, owned by the goroutine that runs it, joins:
//
//   - a Leg, the phone side behind one interface (leg.go): SIPLeg over a
//     SIP dialog (package sip) and its RTP media (package media) today; a
//     WebRTC leg or a leg on another node implement the same interface;
//   - a Conversation, the model side (package conversation makes them),
//     chosen by a Router from the Route admission resolved and carried
//     with the call (no store read);
//   - the audio path between them (audio.go): a passthrough when the
//     conversation speaks the leg's G.711, else resampling or G.711
//     coding, one frame at a time on the leg's media goroutine;
//   - the keypad (keypad.go): every key the leg reports (RFC 4733, SIP
//     INFO, in-band tones) through the conversation's policy, flushed to it
//     on #, after 2.5 s idle, or when the caller speaks.
//
// The media path of a call on a SIP leg with a 24 kHz PCM16 model:
//
//	RTP in -> Jitter -> PCMU(decode) -> Resample(8k->24k) -> PCM16LE -> Conversation.Audio
//	Phone.Play -> PCM16LE -> Resample(24k->8k) -> Playout -> Pacer -> PCMU(encode) -> RTP out
//
// The Manager runs calls (it is the SIP server's sip.Handler) and keeps
// the registry of live calls that the calls API reads, and the call
// metrics.
package call
