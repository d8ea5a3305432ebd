// Package media owns the phone leg's audio: RTP/RTCP sockets taken from a
// port pool, symmetric RTP latching, a jitter buffer with loss concealment,
// G.711 (PCMU/PCMA) coding with github.com/zaf/g711, a polyphase
// windowed-sinc resampler between 8 kHz and the model's rate, an outbound
// playout queue with barge-in Flush, a drift-free pacer, per-call stats and
// RTCP sender/receiver reports.
//
// The per-frame pieces (Codec, Resampler, JitterBuffer, Playout, Pacer,
// InboundPipeline, OutboundPipeline) are pure: bytes and packets in, bytes
// and packets out, no goroutines, no sockets, the clock passed in, and no
// allocation per frame once their buffers have grown to the frame size.
// Session ties them to real UDP sockets for one call and owns the only
// goroutines of the package.
//
// The package knows nothing about SIP or the model: the call object
// configures a Session from the negotiated SDP and moves PCM between it and
// the model session.
package media
