package usage

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAccumResults(t *testing.T) {
	var a accum
	for _, x := range []float64{7, 1, 9, 3, 5, 2, 8, 4, 10, 6} { // 1..10
		a.add(x, true)
	}
	tests := []struct {
		agg  Aggregation
		want float64
	}{
		{AggCount, 10}, {AggSum, 55}, {AggAvg, 5.5}, {AggMin, 1}, {AggMax, 10},
		{AggVar, 8.25}, {AggStd, math.Sqrt(8.25)},
		{AggP50, 5}, {AggP90, 9}, {AggP99, 10}, {AggP999, 10},
	}
	for _, tt := range tests {
		t.Run(string(tt.agg), func(t *testing.T) {
			require.InDelta(t, tt.want, a.result(tt.agg), 1e-12)
		})
	}
	var empty accum
	for _, tt := range tests {
		require.Zero(t, empty.result(tt.agg), "an interval without samples is 0 for %s", tt.agg)
	}
	var one accum
	one.add(42, true)
	for _, agg := range []Aggregation{AggP50, AggP999, AggMin, AggMax, AggAvg} {
		require.Equal(t, 42.0, one.result(agg), agg)
	}
	require.Zero(t, one.result(AggStd))
}

func TestPercentileNearestRank(t *testing.T) {
	var a accum
	for i := 1; i <= 1000; i++ {
		a.add(float64(i), true)
	}
	require.Equal(t, 500.0, a.result(AggP50))
	require.Equal(t, 900.0, a.result(AggP90))
	require.Equal(t, 990.0, a.result(AggP99))
	require.Equal(t, 999.0, a.result(AggP999))
}

func TestFieldsAggregations(t *testing.T) {
	fs := Fields()
	require.Equal(t, []string{"call_minutes", "calls", "answered_calls", "call_duration_seconds"}, fieldNames())
	for _, f := range fs {
		require.NotEmpty(t, f.Description)
		require.NotEmpty(t, f.Aggregations)
		for _, a := range f.Aggregations {
			require.True(t, knownAggs[a], "%s: %s", f.Name, a)
			require.NotEqual(t, AggNone, a)
		}
	}
	fs[0].Aggregations[0] = AggMax
	require.Equal(t, AggSum, Fields()[0].Aggregations[0], "callers get a copy")
}
