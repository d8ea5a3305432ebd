package media

import "sync"

// Magnitudes returns the absolute linear value of each of c's code words,
// indexed by code word: a frame's level is measured on G.711 bytes with
// one lookup per sample, without decoding the frame.
func Magnitudes(c Codec) *[256]uint16 {
	t := magnitudeTables()
	if c.ulaw {
		return &t[0]
	}
	return &t[1]
}

var magnitudeTables = sync.OnceValue(func() *[2][256]uint16 {
	var t [2][256]uint16
	for law, c := range []Codec{PCMU, PCMA} {
		for b := range 256 {
			s := int(c.DecodeFrame(nil, []byte{byte(b)})[0])
			if s < 0 {
				s = -s
			}
			t[law][b] = uint16(s)
		}
	}
	return &t
})
