package media

import (
	"fmt"

	"github.com/pion/rtp"
)

// CodedJitterBuffer is the jitter buffer of a G.711 passthrough: the same
// timeline as JitterBuffer (reordering, duplicates, late packets, resync,
// overflow, the same PushResult and FrameStatus for the same packets, so
// the stats read alike), but it stores the code words of one codec and
// Pop hands out frames of them, so the pipeline reads "Jitter(40ms PCMU)"
// with no decode.
//
// Packets in that codec are stored byte for byte. Packets in the other
// G.711 (the peer switched after a re-INVITE while the consumer kept its
// law) are transcoded on Push with Codec.Transcode. A lost sample is
// concealed like JitterBuffer conceals it, an attenuated repeat of the
// last good frame, done on the code words with one 256-byte table per
// step; silence is the codec's silence byte (0xFF for PCMU, 0xD5 for
// PCMA). It is pure and not safe for concurrent use.
type CodedJitterBuffer struct {
	timeline[byte]
	codec   Codec
	scratch []byte
}

// NewCodedJitterBuffer returns an empty buffer of c's code words.
func NewCodedJitterBuffer(c Codec, opts JitterOptions) (*CodedJitterBuffer, error) {
	if known, ok := CodecByPayloadType(c.PayloadType); !ok || known.Name != c.Name {
		return nil, fmt.Errorf("jitter buffer: %w: %q", errUnknownCodec, c.Name)
	}
	j := &CodedJitterBuffer{codec: c, scratch: make([]byte, 0, 480)}
	if err := j.init(opts, c.SilenceByte(), c.concealer()); err != nil {
		return nil, err
	}
	return j, nil
}

// Codec returns the codec of the frames Pop hands out.
func (j *CodedJitterBuffer) Codec() Codec { return j.codec }

// String names the stage, e.g. "Jitter(40ms PCMU)".
func (j *CodedJitterBuffer) String() string {
	return fmt.Sprintf("Jitter(%dms %s)", j.target/8, j.codec.Name)
}

// Push stores the payload of one RTP packet, transcoded first when its
// payload type is the other G.711. The payload is not retained.
func (j *CodedJitterBuffer) Push(h *rtp.Header, payload []byte) PushResult {
	codec, ok := acceptPacket(h, payload, len(j.ring))
	if !ok {
		return PushUnsupported
	}
	if !codec.sameLaw(j.codec) {
		j.scratch = j.codec.Transcode(j.scratch[:0], codec, payload)
		payload = j.scratch
	}
	return j.push(h, payload)
}

// Pop appends the next frame (ptime of the codec's bytes, one per 8 kHz
// sample) to dst and says how it was filled. Call it once per ptime on the
// playout clock.
func (j *CodedJitterBuffer) Pop(dst []byte) ([]byte, FrameStatus) { return j.pop(dst) }
