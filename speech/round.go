package speech

import "math"

// round3 rounds seconds to the millisecond for JSON.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// round2 rounds seconds to the hundredth, as transcripts give them.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

// roundWords gives a transcript's word times two decimals.
func roundWords(ws []Word) {
	for i := range ws {
		ws[i].Start, ws[i].End = round2(ws[i].Start), round2(ws[i].End)
	}
}

// round gives the transcript's duration and word times two decimals (the
// spec's), whatever the engine measured.
func (t *Transcript) round() {
	t.Duration = round2(t.Duration)
	roundWords(t.Words)
	for i := range t.Channels {
		roundWords(t.Channels[i].Words)
	}
}
