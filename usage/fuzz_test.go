package usage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// FuzzRequest feeds arbitrary request bodies through Parse and Compute:
// either a 400 or an answer that keeps the point limit, with every series
// dense.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"timeRange":{"startTime":"2024-03-10 00:00:00","endTime":"2024-03-11 00:00:00","timezone":"America/New_York"},"timeUnit":"TIME_UNIT_HOUR","values":[{"name":"call_minutes","aggregation":"AGGREGATION_SUM"}],"groupBy":["route"]}`,
		`{"timeRange":{"startTime":"2022-09-10 00:00:00","endTime":"2022-09-20 00:00:00","timezone":"America/Santiago"},"timeUnit":"TIME_UNIT_DAY","values":[{"name":"call_duration_seconds","aggregation":"AGGREGATION_P99"}],"filters":["ended_by!=\"agent\""]}`,
		`{"timeRange":{"startTime":"2024-01-01 00:00:00","endTime":"2025-01-01 00:00:00","timezone":"Australia/Lord_Howe"},"timeUnit":"TIME_UNIT_CALENDAR_WEEK","values":[{"name":"calls","aggregation":"AGGREGATION_COUNT"}],"groupBy":["phone_number","ended_by"]}`,
		`{"timeRange":{"startTime":"2024-05-01 10:00:00","endTime":"2024-05-01 10:00:01"},"timeUnit":"TIME_UNIT_NONE","values":[{"name":"answered_calls","aggregation":"AGGREGATION_COUNT"}]}`,
	} {
		f.Add(s)
	}
	base := time.Date(2024, 3, 10, 5, 0, 0, 0, time.UTC)
	var spans []store.CallSpan
	for i := range 40 {
		inv := base.Add(time.Duration(i*i) * 7 * time.Minute)
		c := store.CallSpan{PhoneNumber: []string{"+1", "+2", "+3"}[i%3], Route: []string{"echo", "agent:a"}[i%2],
			EndedBy: []string{"caller", "agent", ""}[i%3], InviteTime: inv, EndTime: inv.Add(time.Duration(i) * time.Minute)}
		if i%4 != 0 {
			c.AnswerTime = inv.Add(time.Second)
		}
		spans = append(spans, c)
	}
	const maxPoints = 500
	f.Fuzz(func(t *testing.T, body string) {
		var req AnalyticsRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		q, err := Parse(&req, maxPoints)
		if err != nil {
			return
		}
		out := Compute(q, spans, maxPoints)
		n := 0
		for _, s := range out.TimeSeries {
			require.Len(t, s.DataPoints, q.Buckets.Len())
			n += len(s.DataPoints)
			for _, p := range s.DataPoints {
				require.Len(t, p.Values, len(q.Values))
			}
		}
		require.LessOrEqual(t, n, maxPoints)
	})
}
