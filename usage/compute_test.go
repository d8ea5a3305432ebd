package usage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

var t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// span is a call invited at t0+inv, answered at t0+ans (unless ans < 0 is
// "never"), ended at t0+end.
func span(number, route, by string, inv, ans, end time.Duration) store.CallSpan {
	c := store.CallSpan{PhoneNumber: number, Route: route, EndedBy: by, InviteTime: t0.Add(inv), EndTime: t0.Add(end)}
	if ans != never {
		c.AnswerTime = t0.Add(ans)
	}
	return c
}

const never = time.Duration(-1 << 62)

func compute(t *testing.T, r *AnalyticsRequest, spans []store.CallSpan, maxPoints int) *Response {
	t.Helper()
	q, err := Parse(r, maxPoints)
	require.NoError(t, err)
	return Compute(q, spans, maxPoints)
}

func hourly(values ...Value) *AnalyticsRequest {
	return &AnalyticsRequest{
		TimeRange: &TimeRange{StartTime: "2024-05-01 10:00:00", EndTime: "2024-05-01 13:00:00", Timezone: "UTC"},
		TimeUnit:  TimeUnitHour, Values: values,
	}
}

func points(s Series) [][]float64 {
	var out [][]float64
	for _, p := range s.DataPoints {
		out = append(out, p.Values)
	}
	return out
}

func TestComputeSplitsMinutesAndCountsCalls(t *testing.T) {
	spans := []store.CallSpan{
		// 10:50 → 11:20 answered: 10 min in 10:00, 20 min in 11:00.
		span("+1", "echo", "caller", 50*time.Minute, 50*time.Minute, 80*time.Minute),
		// invited 10:05, answered 10:06, ended 10:09: 3 min.
		span("+1", "echo", "agent", 5*time.Minute, 6*time.Minute, 9*time.Minute),
		// never answered, invited 12:30.
		span("+2", "agent:ag_1", "caller", 150*time.Minute, never, 151*time.Minute),
		// started before the range: only the minutes from 10:00 count, not the call.
		span("+2", "agent:ag_1", "caller", -30*time.Minute, -29*time.Minute, 15*time.Minute),
	}
	r := hourly(Value{"call_minutes", AggSum}, Value{"calls", AggCount}, Value{"answered_calls", AggCount})
	out := compute(t, r, spans, DefaultMaxPoints)
	require.False(t, out.LimitReached)
	require.Len(t, out.TimeSeries, 1)
	s := out.TimeSeries[0]
	require.Equal(t, []string{}, s.Group)
	require.Equal(t, []string{}, s.GroupLabels)
	require.Equal(t, []string{"2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z", "2024-05-01T12:00:00Z"},
		[]string{s.DataPoints[0].Timestamp, s.DataPoints[1].Timestamp, s.DataPoints[2].Timestamp})
	require.Equal(t, [][]float64{{10 + 3 + 15, 2, 2}, {20, 0, 0}, {0, 1, 0}}, points(s))
}

func TestComputeNoneIsOneBucket(t *testing.T) {
	spans := []store.CallSpan{
		span("+1", "echo", "caller", 0, 0, 90*time.Second),
		span("+1", "echo", "caller", time.Hour, time.Hour, time.Hour+30*time.Second),
	}
	r := hourly(Value{"call_minutes", AggSum}, Value{"calls", AggCount})
	r.TimeUnit = TimeUnitNone
	out := compute(t, r, spans, DefaultMaxPoints)
	require.Len(t, out.TimeSeries, 1)
	require.Equal(t, "2024-05-01T10:00:00Z", out.TimeSeries[0].DataPoints[0].Timestamp)
	require.Equal(t, [][]float64{{2, 2}}, points(out.TimeSeries[0]))
}

func TestComputeDenseZerosWithoutCalls(t *testing.T) {
	out := compute(t, hourly(Value{"call_minutes", AggSum}, Value{"call_duration_seconds", AggP90}), nil, DefaultMaxPoints)
	require.Len(t, out.TimeSeries, 1)
	require.Equal(t, [][]float64{{0, 0}, {0, 0}, {0, 0}}, points(out.TimeSeries[0]))

	r := hourly(Value{"calls", AggCount})
	r.GroupBy = []string{"route"}
	out = compute(t, r, nil, DefaultMaxPoints)
	require.Equal(t, []Series{}, out.TimeSeries, "grouped, no call makes no group")
}

func TestComputeDurations(t *testing.T) {
	spans := []store.CallSpan{
		span("+1", "echo", "caller", 0, time.Minute, time.Minute+10*time.Second),     // 10 s, answered 10:01
		span("+1", "echo", "caller", 0, 2*time.Minute, 2*time.Minute+30*time.Second), // 30 s
		span("+1", "echo", "caller", 0, 3*time.Minute, 3*time.Minute+20*time.Second), // 20 s
		span("+1", "echo", "caller", 59*time.Minute, 61*time.Minute, 62*time.Minute), // 60 s, answered 11:01
		span("+1", "echo", "caller", 0, never, time.Minute),                          // not answered: no duration
		span("+1", "echo", "caller", -time.Hour, -time.Hour, time.Minute),            // answered before the range
	}
	r := hourly(Value{"call_duration_seconds", AggCount}, Value{"call_duration_seconds", AggAvg},
		Value{"call_duration_seconds", AggP50}, Value{"call_duration_seconds", AggMax}, Value{"call_duration_seconds", AggMin},
		Value{"call_duration_seconds", AggSum})
	out := compute(t, r, spans, DefaultMaxPoints)
	require.Equal(t, [][]float64{{3, 20, 20, 30, 10, 60}, {1, 60, 60, 60, 60, 60}, {0, 0, 0, 0, 0, 0}}, points(out.TimeSeries[0]))
}

func TestComputeGroupsAndFilters(t *testing.T) {
	spans := []store.CallSpan{
		span("+2", "echo", "caller", 0, 0, time.Minute),
		span("+1", "agent:ag_1", "agent", 0, 0, 2*time.Minute),
		span("+1", "agent:ag_1", "caller", 0, 0, 3*time.Minute),
		span("+1", "echo", "caller", time.Hour, time.Hour, time.Hour+4*time.Minute),
	}
	r := hourly(Value{"call_minutes", AggSum})
	r.TimeUnit = TimeUnitNone
	r.GroupBy = []string{"phone_number", "route"}
	out := compute(t, r, spans, DefaultMaxPoints)
	var got []string
	for _, s := range out.TimeSeries {
		require.Equal(t, []string{"phone_number", "route"}, s.GroupLabels)
		got = append(got, s.Group[0]+" "+s.Group[1])
	}
	require.Equal(t, []string{"+1 agent:ag_1", "+1 echo", "+2 echo"}, got, "sorted by group")
	require.Equal(t, [][]float64{{5}}, points(out.TimeSeries[0]))
	require.Equal(t, [][]float64{{4}}, points(out.TimeSeries[1]))
	require.Equal(t, [][]float64{{1}}, points(out.TimeSeries[2]))

	r.GroupBy = []string{"ended_by"}
	r.Filters = []string{`phone_number="+1"`, `route!="echo"`}
	out = compute(t, r, spans, DefaultMaxPoints)
	require.Len(t, out.TimeSeries, 2)
	require.Equal(t, []string{"agent"}, out.TimeSeries[0].Group)
	require.Equal(t, [][]float64{{2}}, points(out.TimeSeries[0]))
	require.Equal(t, []string{"caller"}, out.TimeSeries[1].Group)
	require.Equal(t, [][]float64{{3}}, points(out.TimeSeries[1]))

	r.GroupBy, r.Filters = nil, []string{`phone_number="+3"`}
	out = compute(t, r, spans, DefaultMaxPoints)
	require.Equal(t, [][]float64{{0}}, points(out.TimeSeries[0]), "no call passes: one series of zeros")
}

func TestComputeLimitReachedKeepsTheHeaviestSeries(t *testing.T) {
	var spans []store.CallSpan
	// Numbers +10 … +19; number +1i has i+1 calls.
	for i := range 10 {
		for range i + 1 {
			spans = append(spans, span("+1"+string(rune('0'+i)), "echo", "caller", 0, 0, time.Minute))
		}
	}
	r := hourly(Value{"calls", AggCount}, Value{"call_minutes", AggSum}) // 3 intervals
	r.GroupBy = []string{"phone_number"}
	out := compute(t, r, spans, 30)
	require.False(t, out.LimitReached, "10 series × 3 intervals is exactly the limit")
	require.Len(t, out.TimeSeries, 10)

	out = compute(t, r, spans, 14) // room for 4 series
	require.True(t, out.LimitReached)
	var kept []string
	for _, s := range out.TimeSeries {
		kept = append(kept, s.Group[0])
		require.Len(t, s.DataPoints, 3, "the kept series stay dense")
	}
	require.Equal(t, []string{"+16", "+17", "+18", "+19"}, kept, "the series with the most calls, in group order")
}

func BenchmarkCompute(b *testing.B) {
	var spans []store.CallSpan
	for i := range 10000 {
		inv := time.Duration(i) * 8 * time.Second
		spans = append(spans, span("+1"+string(rune('0'+i%10)), "echo", "caller", inv, inv+time.Second, inv+3*time.Minute))
	}
	r := &AnalyticsRequest{
		TimeRange: &TimeRange{StartTime: "2024-05-01 00:00:00", EndTime: "2024-05-02 00:00:00", Timezone: "America/New_York"},
		TimeUnit:  TimeUnitQuarterHour,
		Values:    []Value{{"call_minutes", AggSum}, {"calls", AggCount}, {"call_duration_seconds", AggP90}},
		GroupBy:   []string{"phone_number"},
	}
	q, err := Parse(r, DefaultMaxPoints)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		Compute(q, spans, DefaultMaxPoints)
	}
}
