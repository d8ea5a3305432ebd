package speech

import "math"

// sine is amp·sin(2π·hz·t) for seconds at rate.
func sine(rate int, hz, seconds, amp float64) []int16 {
	out := make([]int16, int(float64(rate)*seconds))
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return out
}
