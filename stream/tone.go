package stream

import (
	"math"

	"switchboard/media"
)

// sitTone renders the special information tone (ITU-T E.180: three rising
// tones, 913.8, 1370.6 and 1776.7 Hz) at rate as PCM16LE: what a caller
// hears when the call cannot be completed, here when the bot is
// unreachable and no fallback agent takes the call.
func sitTone(rate int) []byte {
	var pcm []int16
	for _, t := range []struct {
		hz float64
		ms int
	}{{913.8, 274}, {1370.6, 274}, {1776.7, 380}} {
		n := rate * t.ms / 1000
		fade := rate / 200
		for i := 0; i < n; i++ {
			g := 0.25
			if i < fade {
				g *= float64(i) / float64(fade)
			} else if n-i < fade {
				g *= float64(n-i) / float64(fade)
			}
			pcm = append(pcm, int16(g*32767*math.Sin(2*math.Pi*t.hz*float64(i)/float64(rate))))
		}
	}
	pcm = append(pcm, make([]int16, rate/4)...) // a pause before the hangup
	return media.AppendPCM16LE(nil, pcm)
}
