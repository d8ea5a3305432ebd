package media

// Opus (RFC 6716) on RTP (RFC 7587): the rtpmap always reads
// opus/48000/2, whatever the channels and the rate the audio is coded at;
// the RTP clock runs at 48 kHz (a 20 ms packet advances the timestamp by
// 960); the payload type is dynamic. A packet is one to 48 frames of 2.5
// to 60 ms whose bytes cannot be split or joined, so an Opus session holds
// packets (PacketJitterBuffer), decodes them with its Decoder after the
// jitter buffer and encodes with its Encoder in the pacer; the codec
// itself is libopus (package media/opus, behind Codec.NewDecoder and
// Codec.NewEncoder).

// OpusClockRate is the RTP clock rate of Opus.
const OpusClockRate = 48000

// OpusCodec returns Opus with the dynamic payload type pt the offer gave it.
func OpusCodec(pt uint8) Codec {
	return Codec{PayloadType: pt, Name: "opus", ClockRate: OpusClockRate, opus: true}
}

// opusMaxSamples is the longest Opus packet, 120 ms at 48 kHz (RFC 6716
// section 3.2.5).
const opusMaxSamples = 5760

// opusStep is the shortest Opus frame, 2.5 ms at 48 kHz: every packet
// lasts a whole number of them, and libopus conceals by them.
const opusStep = 120

// OpusPacketSamples returns how many samples at 48 kHz (RTP timestamp
// ticks) an Opus packet holds, from its table-of-contents byte and, for a
// code 3 packet, its frame count (RFC 6716 section 3.1); ok is false for
// a packet that is empty, malformed or longer than 120 ms.
func OpusPacketSamples(p []byte) (n int, ok bool) {
	if len(p) == 0 {
		return 0, false
	}
	toc := p[0]
	config := int(toc >> 3)
	var frame int
	switch {
	case config < 12: // SILK-only: 10, 20, 40, 60 ms
		frame = [4]int{480, 960, 1920, 2880}[config&3]
	case config < 16: // hybrid: 10, 20 ms
		frame = [2]int{480, 960}[config&1]
	default: // CELT-only: 2.5, 5, 10, 20 ms
		frame = [4]int{120, 240, 480, 960}[config&3]
	}
	count := 1
	switch toc & 3 {
	case 1, 2:
		count = 2
	case 3:
		if len(p) < 2 {
			return 0, false
		}
		count = int(p[1] & 0x3f)
	}
	n = frame * count
	if n == 0 || n > opusMaxSamples {
		return 0, false
	}
	return n, true
}
