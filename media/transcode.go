package media

import "github.com/zaf/g711"

// Transcode appends payload, G.711 in codec from, to dst re-encoded in c,
// and returns the extended slice. Between the two laws it maps each code
// word directly with the conversion tables of ITU-T G.711 (Tables 3 and 4,
// as github.com/zaf/g711 carries them) instead of a round trip through
// linear PCM; the tables are what a transcoding exchange applies. A-law
// has no zero code: its silence 0xD5 is +8 and maps to mu-law 0xFE (+8),
// while mu-law's 0xFF (0) maps to 0xD5. With from equal to c the bytes are
// copied unchanged. dst may be payload[:0] to transcode in place. It does
// not allocate when dst has capacity.
//
// G.722 and G.711 do not transcode into each other: the result is c's
// silence. A G.711 passthrough uses it when the call's codec changes mid-call (a
// re-INVITE from PCMU to PCMA) while the consumer keeps its own law.
func (c Codec) Transcode(dst []byte, from Codec, payload []byte) []byte {
	n := len(dst)
	dst = grow(dst, len(payload))
	out := dst[n : n+len(payload)]
	switch {
	case c.sameLaw(from):
		copy(out, payload)
	case c.g722 || from.g722:
		// G.722 is never transcoded: the bytes would be noise.
		fill(out, c.SilenceByte())
	case c.ulaw:
		for i, b := range payload {
			out[i] = g711.Alaw2UlawFrame(b)
		}
	default:
		for i, b := range payload {
			out[i] = g711.Ulaw2AlawFrame(b)
		}
	}
	return dst
}

// sameLaw reports whether c and o code samples the same way.
func (c Codec) sameLaw(o Codec) bool { return c.ulaw == o.ulaw && c.g722 == o.g722 }
