package media

import "math"

// convertTaps is the half-width of the windowed-sinc kernel in input
// samples at the narrower of the two rates.
const convertTaps = 16

// Convert resamples a whole mono 16-bit PCM signal from inRate to outRate
// with a Blackman-windowed sinc low-pass filter at the lower Nyquist
// frequency (band-limited, so downsampling does not alias). Unlike the
// per-frame Resampler it takes any pair of positive rates (22050, 44100:
// what TTS engines and WAV files bring), through the reduced ratio; equal
// rates return a copy. It allocates: it is for whole clips, not frames.
func Convert(in []int16, inRate, outRate int) []int16 {
	if inRate == outRate || len(in) == 0 {
		return append([]int16(nil), in...)
	}
	g := gcd(inRate, outRate)
	up, down := outRate/g, inRate/g // output n sits at input position n*down/up
	cutoff := 1.0
	if outRate < inRate {
		cutoff = float64(outRate) / float64(inRate)
	}
	half := int(math.Ceil(convertTaps / cutoff))
	width := 2 * half
	// One filter per output phase (n*down mod up), built once.
	table := make([][]float64, up)
	for p := 0; p < up; p++ {
		frac := float64(p) / float64(up)
		h := make([]float64, width)
		var sum float64
		for k := 0; k < width; k++ {
			x := float64(k-half+1) - frac // distance from the output point
			h[k] = cutoff * sinc(cutoff*x) * blackman(x, float64(half))
			sum += h[k]
		}
		for k := range h {
			h[k] /= sum // unity gain at DC
		}
		table[p] = h
	}
	outLen := int((int64(len(in))*int64(up) + int64(down) - 1) / int64(down))
	out := make([]int16, outLen)
	for n := 0; n < outLen; n++ {
		pos := int64(n) * int64(down)
		base := int(pos / int64(up))
		h := table[pos%int64(up)]
		var acc float64
		for k := 0; k < width; k++ {
			idx := base + k - half + 1
			if idx >= 0 && idx < len(in) {
				acc += h[k] * float64(in[idx])
			}
		}
		out[n] = clamp16(float32(acc))
	}
	return out
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// blackman is the Blackman window over [-half, half].
func blackman(x, half float64) float64 {
	if x <= -half || x >= half {
		return 0
	}
	t := (x + half) / (2 * half)
	return 0.42 - 0.5*math.Cos(2*math.Pi*t) + 0.08*math.Cos(4*math.Pi*t)
}
