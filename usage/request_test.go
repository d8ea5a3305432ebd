package usage

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/api/httpx"
)

// baseRequest is a valid request the tests change one field of.
func baseRequest() *AnalyticsRequest {
	return &AnalyticsRequest{
		TimeRange: &TimeRange{StartTime: "2024-05-01 00:00:00", EndTime: "2024-05-02 00:00:00", Timezone: "America/New_York"},
		TimeUnit:  TimeUnitHour,
		Values:    []Value{{Name: "call_minutes", Aggregation: AggSum}, {Name: "calls", Aggregation: AggCount}},
		GroupBy:   []string{"phone_number"},
		Filters:   []string{`route="echo"`},
	}
}

func TestParseValid(t *testing.T) {
	q, err := Parse(baseRequest(), DefaultMaxPoints)
	require.NoError(t, err)
	require.Equal(t, 24, q.Buckets.Len())
	require.Equal(t, "2024-05-01T04:00:00Z", q.Buckets.From.UTC().Format("2006-01-02T15:04:05Z"))
	require.Equal(t, []Filter{{Field: "route", Value: "echo"}}, q.Filters)

	r := baseRequest()
	r.TimeRange.Timezone = ""
	q, err = Parse(r, DefaultMaxPoints)
	require.NoError(t, err)
	require.Equal(t, "2024-05-01T00:00:00Z", q.Buckets.From.Format("2006-01-02T15:04:05Z"), "no timezone is UTC")

	r = baseRequest()
	r.GroupBy, r.Filters = nil, nil
	r.Values = []Value{{"call_duration_seconds", AggP99}, {"call_duration_seconds", AggStd}, {"answered_calls", AggCount}}
	_, err = Parse(r, DefaultMaxPoints)
	require.NoError(t, err)
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *AnalyticsRequest)
		param  string
	}{
		{"no time range", func(r *AnalyticsRequest) { r.TimeRange = nil }, "analyticsRequest.timeRange"},
		{"unknown zone", func(r *AnalyticsRequest) { r.TimeRange.Timezone = "Mars/Olympus" }, "analyticsRequest.timeRange.timezone"},
		{"server local zone", func(r *AnalyticsRequest) { r.TimeRange.Timezone = "Local" }, "analyticsRequest.timeRange.timezone"},
		{"no start", func(r *AnalyticsRequest) { r.TimeRange.StartTime = "" }, "analyticsRequest.timeRange.startTime"},
		{"RFC 3339 start", func(r *AnalyticsRequest) { r.TimeRange.StartTime = "2024-05-01T00:00:00Z" }, "analyticsRequest.timeRange.startTime"},
		{"date only", func(r *AnalyticsRequest) { r.TimeRange.StartTime = "2024-05-01" }, "analyticsRequest.timeRange.startTime"},
		{"bad end", func(r *AnalyticsRequest) { r.TimeRange.EndTime = "2024-13-01 00:00:00" }, "analyticsRequest.timeRange.endTime"},
		{"end before start", func(r *AnalyticsRequest) { r.TimeRange.EndTime = "2024-04-30 00:00:00" }, "analyticsRequest.timeRange.endTime"},
		{"empty range", func(r *AnalyticsRequest) { r.TimeRange.EndTime = r.TimeRange.StartTime }, "analyticsRequest.timeRange.endTime"},
		{"no unit", func(r *AnalyticsRequest) { r.TimeUnit = "" }, "analyticsRequest.timeUnit"},
		{"invalid unit", func(r *AnalyticsRequest) { r.TimeUnit = TimeUnitInvalid }, "analyticsRequest.timeUnit"},
		{"unknown unit", func(r *AnalyticsRequest) { r.TimeUnit = "TIME_UNIT_YEAR" }, "analyticsRequest.timeUnit"},
		{"too many intervals", func(r *AnalyticsRequest) { r.TimeUnit = TimeUnitSecond }, "analyticsRequest.timeUnit"},
		{"no values", func(r *AnalyticsRequest) { r.Values = nil }, "analyticsRequest.values"},
		{"too many values", func(r *AnalyticsRequest) {
			r.Values = make([]Value, MaxValues+1)
			for i := range r.Values {
				r.Values[i] = Value{"calls", AggCount}
			}
		}, "analyticsRequest.values"},
		{"unknown field", func(r *AnalyticsRequest) { r.Values[1].Name = "tokens" }, "analyticsRequest.values[1].name"},
		{"unknown aggregation", func(r *AnalyticsRequest) { r.Values[0].Aggregation = "AGGREGATION_MEDIAN" }, "analyticsRequest.values[0].aggregation"},
		{"no aggregation", func(r *AnalyticsRequest) { r.Values[0].Aggregation = "" }, "analyticsRequest.values[0].aggregation"},
		{"AVG of call_minutes", func(r *AnalyticsRequest) { r.Values[0].Aggregation = AggAvg }, "analyticsRequest.values[0].aggregation"},
		{"SUM of calls", func(r *AnalyticsRequest) { r.Values[1].Aggregation = AggSum }, "analyticsRequest.values[1].aggregation"},
		{"NONE", func(r *AnalyticsRequest) { r.Values[1].Aggregation = AggNone }, "analyticsRequest.values[1].aggregation"},
		{"COUNT_DISTINCT", func(r *AnalyticsRequest) { r.Values[1].Aggregation = AggCountDistinct }, "analyticsRequest.values[1].aggregation"},
		{"P50 of answered calls", func(r *AnalyticsRequest) { r.Values[1] = Value{"answered_calls", AggP50} }, "analyticsRequest.values[1].aggregation"},
		{"group by unknown", func(r *AnalyticsRequest) { r.GroupBy = []string{"route", "from"} }, "analyticsRequest.groupBy[1]"},
		{"group by twice", func(r *AnalyticsRequest) { r.GroupBy = []string{"route", "route"} }, "analyticsRequest.groupBy[1]"},
		{"bad filter", func(r *AnalyticsRequest) { r.Filters = []string{`route="echo"`, `route=echo`} }, "analyticsRequest.filters[1]"},
		{"filter on unknown field", func(r *AnalyticsRequest) { r.Filters = []string{`state="ended"`} }, "analyticsRequest.filters[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := baseRequest()
			tt.change(r)
			_, err := Parse(r, DefaultMaxPoints)
			var he *httpx.Error
			require.True(t, errors.As(err, &he), "%v", err)
			require.Equal(t, 400, he.Status)
			require.Equal(t, tt.param, he.Param, he.Message)
			require.NotEmpty(t, he.Message)
			require.False(t, strings.Contains(he.Message, "%!"), he.Message)
		})
	}
	_, err := Parse(nil, DefaultMaxPoints)
	var he *httpx.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, "analyticsRequest", he.Param)
}
