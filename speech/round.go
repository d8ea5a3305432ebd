package speech

import "math"

// round3 rounds seconds to the millisecond for JSON.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
