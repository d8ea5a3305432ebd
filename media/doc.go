// Package media owns the phone leg's audio: RTP/RTCP sockets taken from a
// port pool (random pairs), symmetric RTP latching that only the caller can
// steer (strangers' packets dropped and counted), SRTP with SDES keys
// (pion/srtp), a jitter buffer with loss concealment,
// G.711 (PCMU/PCMA) coding with github.com/zaf/g711, a polyphase
// windowed-sinc resampler between 8 kHz and the model's rate, an outbound
// playout queue with barge-in Flush, a drift-free pacer, per-call stats and
// RTCP sender/receiver reports.
//
// The per-frame pieces (Codec, Resampler, JitterBuffer, CodedJitterBuffer,
// Playout, Pacer, InboundPipeline, OutboundPipeline) are pure: bytes and
// packets in, bytes and packets out, no goroutines, no sockets, the clock
// passed in, and no allocation per frame once their buffers have grown to
// the frame size. Session ties them to real UDP sockets for one call and
// owns the only goroutines of the package.
//
// A Session carries PCM, or with SessionOptions.Passthrough the G.711
// bytes themselves, for a consumer that speaks the call's codec:
//
//	RTP -> Jitter(40ms PCMU) -> PCMU(decode) -> OnAudio | Playout -> Pacer(PCMU 20ms) -> RTP
//	RTP -> Jitter(40ms PCMU) -> OnPayload | Playout(PCMU) -> Pacer(PCMU 20ms) -> RTP
//
// In passthrough nothing is decoded or encoded unless asked (OnAudio set
// too), a PCM prompt is encoded once when queued, and a mid-call switch to
// the other G.711 is transcoded code word to code word.
//
// A Tap (SessionOptions.Tap) sees each inbound frame as it is delivered
// and each frame the pacer sends, in the form the session already holds,
// on the media goroutine: the call's health and recording hang there, and
// Magnitudes measures a G.711 frame's level without decoding it.
//
// The package knows nothing about SIP or the model: the call object
// configures a Session from the negotiated SDP and moves audio between it
// and the model session.
package media
