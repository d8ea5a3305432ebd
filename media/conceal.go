package media

import "sync"

// concealGains attenuate successive concealed frames; after them the
// buffer plays silence (repeating one frame for longer sounds like a buzz).
var concealGains = [...]float32{0.7, 0.4, 0.15}

// concealPCM fills the missing samples of out with the last good frame
// scaled by the step-th gain.
func concealPCM(out, last []int16, miss []bool, step int) {
	g := concealGains[step]
	for i, m := range miss {
		if m {
			out[i] = int16(float32(last[i]) * g)
		}
	}
}

// concealer returns the G.711 counterpart of concealPCM for c: the same
// attenuated repeat, done on the code words. Scaling a G.711 sample is a
// function of its 8-bit code, so each gain is a 256-byte table built once
// (decode, scale exactly as concealPCM does, encode): a concealed frame
// costs one lookup per sample and never leaves the codec's domain, and it
// sounds like the PCM buffer's concealment up to G.711 quantisation.
func (c Codec) concealer() func(out, last []byte, miss []bool, step int) {
	if c.g722 {
		// A repeated G.722 code word is not an attenuated repeat of the
		// sound: a lost one plays silence.
		silence := c.SilenceByte()
		return func(out, _ []byte, miss []bool, _ int) {
			for i, m := range miss {
				if m {
					out[i] = silence
				}
			}
		}
	}
	t := &concealTables()[0]
	if !c.ulaw {
		t = &concealTables()[1]
	}
	return func(out, last []byte, miss []bool, step int) {
		g := &t[step]
		for i, m := range miss {
			if m {
				out[i] = g[last[i]]
			}
		}
	}
}

// concealTables are the attenuation tables of concealer: [0] mu-law, [1]
// A-law; then one per gain, indexed by code word.
var concealTables = sync.OnceValue(func() *[2][len(concealGains)][256]byte {
	var t [2][len(concealGains)][256]byte
	for law, c := range []Codec{PCMU, PCMA} {
		for step := range concealGains {
			for b := range 256 {
				s := c.DecodeFrame(nil, []byte{byte(b)})
				concealPCM(s, s, []bool{true}, step)
				t[law][step][b] = c.EncodeFrame(nil, s)[0]
			}
		}
	}
	return &t
})
