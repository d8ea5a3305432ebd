package usage

import (
	"math"
	"sort"
)

// Aggregation turns the samples of an interval into one number, as
// spelled in the request.
type Aggregation string

// The aggregations of the request; which ones a field supports is listed
// in [Fields].
const (
	AggNone          Aggregation = "AGGREGATION_NONE"
	AggSum           Aggregation = "AGGREGATION_SUM"
	AggAvg           Aggregation = "AGGREGATION_AVG"
	AggVar           Aggregation = "AGGREGATION_VAR"
	AggStd           Aggregation = "AGGREGATION_STD"
	AggMin           Aggregation = "AGGREGATION_MIN"
	AggMax           Aggregation = "AGGREGATION_MAX"
	AggP50           Aggregation = "AGGREGATION_P50"
	AggP90           Aggregation = "AGGREGATION_P90"
	AggP99           Aggregation = "AGGREGATION_P99"
	AggP999          Aggregation = "AGGREGATION_P999"
	AggCount         Aggregation = "AGGREGATION_COUNT"
	AggCountDistinct Aggregation = "AGGREGATION_COUNT_DISTINCT"
)

var knownAggs = map[Aggregation]bool{
	AggNone: true, AggSum: true, AggAvg: true, AggVar: true, AggStd: true, AggMin: true, AggMax: true,
	AggP50: true, AggP90: true, AggP99: true, AggP999: true, AggCount: true, AggCountDistinct: true,
}

// quantiles are the percentile aggregations.
var quantiles = map[Aggregation]float64{AggP50: 0.50, AggP90: 0.90, AggP99: 0.99, AggP999: 0.999}

// keepsSamples reports whether a needs every sample, not only the count
// and sum.
func (a Aggregation) keepsSamples() bool {
	switch a {
	case AggCount, AggSum, AggAvg:
		return false
	}
	return true
}

// accum gathers the samples of one value in one interval.
type accum struct {
	n   int
	sum float64
	xs  []float64
}

func (a *accum) add(v float64, keep bool) {
	a.n++
	a.sum += v
	if keep {
		a.xs = append(a.xs, v)
	}
}

// result applies agg; an interval without samples is 0.
func (a *accum) result(agg Aggregation) float64 {
	switch agg {
	case AggCount:
		return float64(a.n)
	case AggSum:
		return a.sum
	}
	if a.n == 0 {
		return 0
	}
	mean := a.sum / float64(a.n)
	switch agg {
	case AggAvg:
		return mean
	case AggVar, AggStd:
		var ss float64
		for _, x := range a.xs {
			ss += (x - mean) * (x - mean)
		}
		v := ss / float64(len(a.xs))
		if agg == AggStd {
			return math.Sqrt(v)
		}
		return v
	case AggMin, AggMax:
		m := a.xs[0]
		for _, x := range a.xs[1:] {
			if (agg == AggMin && x < m) || (agg == AggMax && x > m) {
				m = x
			}
		}
		return m
	}
	// Nearest rank: the smallest sample with at least p of the samples at
	// or below it.
	sort.Float64s(a.xs)
	rank := int(math.Ceil(quantiles[agg] * float64(len(a.xs))))
	return a.xs[max(rank, 1)-1]
}
