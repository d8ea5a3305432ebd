package test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// TestUsageOfRealCalls places two real calls to the demo number and reads
// them back as usage: two calls, answered minutes above zero, the
// duration of each call, and the same through a time zone and hourly
// intervals.
func TestUsageOfRealCalls(t *testing.T) {
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), nil))
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)

	var (
		wg   sync.WaitGroup
		errs = make(chan error, 2)
	)
	for _, from := range []string{"+14155550123", "+14155550124"} {
		p := newPhone(t)
		oc := p.call(t, d, from)
		wg.Go(func() {
			// The call lasts a second (real time: 55 frames, a few of them
			// maybe caught up after a stall): billed seconds count it.
			p.lasts(t, 55)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			errs <- oc.Hangup(ctx, "done")
		})
	}
	wg.Wait()
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	end := time.Now().UTC().Add(time.Minute).Truncate(time.Second)

	req := func(unit, tz string, from, to time.Time, values ...map[string]string) map[string]any {
		return map[string]any{"analyticsRequest": map[string]any{
			"timeRange": map[string]string{"startTime": from.Format("2006-01-02 15:04:05"), "endTime": to.Format("2006-01-02 15:04:05"), "timezone": tz},
			"timeUnit":  unit, "values": values,
		}}
	}
	type response struct {
		TimeSeries []struct {
			Group      []string `json:"group"`
			DataPoints []struct {
				Timestamp string    `json:"timestamp"`
				Values    []float64 `json:"values"`
			} `json:"dataPoints"`
		} `json:"timeSeries"`
		LimitReached bool `json:"limitReached"`
	}
	values := []map[string]string{
		{"name": "call_minutes", "aggregation": "AGGREGATION_SUM"},
		{"name": "calls", "aggregation": "AGGREGATION_COUNT"},
		{"name": "answered_calls", "aggregation": "AGGREGATION_COUNT"},
		{"name": "call_duration_seconds", "aggregation": "AGGREGATION_MIN"},
	}
	// The records are stored at admission and closed as the calls end;
	// wait for both to be counted and both ends to be stored.
	var (
		out  response
		last []byte
	)
	if !assert.Eventually(t, func() bool {
		st, _, raw := d.Do(t, "POST", "/v1/billing/teams/default/usage", d.OwnerKey, req("TIME_UNIT_NONE", "UTC", start, end, values...))
		require.Equal(t, 200, st, "%s", raw)
		var got response
		require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
		require.Len(t, got.TimeSeries, 1, "%s", raw)
		out, last = got, raw
		v := got.TimeSeries[0].DataPoints[0].Values
		return v[1] == 2 && v[0] > 1.5/60
	}, 5*time.Second, 50*time.Millisecond) {
		t.Fatalf("two calls of about a second each counted within 5 s: %s", last)
	}
	require.False(t, out.LimitReached)
	require.Len(t, out.TimeSeries[0].DataPoints, 1)
	v := out.TimeSeries[0].DataPoints[0].Values
	require.Greater(t, v[0], 1.5/60, "about a second each: call_minutes %v", v[0])
	require.Less(t, v[0], 10.0/60, "call_minutes %v", v[0])
	require.Equal(t, 2.0, v[2], "both answered")
	require.Greater(t, v[3], 0.5, "the shorter call lasted about a second")
	require.Equal(t, start.Format(time.RFC3339), out.TimeSeries[0].DataPoints[0].Timestamp)

	// Minute intervals in another zone: the same totals, spread densely.
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	st, _, raw := d.Do(t, "POST", "/v1/billing/teams/default/usage", d.OwnerKey,
		req("TIME_UNIT_MINUTE", "Asia/Tokyo", start.In(tokyo), end.In(tokyo), values[0], values[1]))
	require.Equal(t, 200, st, "%s", raw)
	var mins response
	require.NoError(t, json.Unmarshal(raw, &mins))
	require.Len(t, mins.TimeSeries, 1)
	pts := mins.TimeSeries[0].DataPoints
	require.GreaterOrEqual(t, len(pts), 2)
	var minutes, calls float64
	for _, p := range pts {
		minutes += p.Values[0]
		calls += p.Values[1]
	}
	require.InDelta(t, v[0], minutes, 1e-9)
	require.Equal(t, 2.0, calls)

	// Management only; another team is not found; bad requests name their field.
	st, _, raw = d.Do(t, "POST", "/v1/billing/teams/acme/usage", d.OwnerKey, req("TIME_UNIT_NONE", "UTC", start, end, values...))
	require.Equal(t, 404, st, "%s", raw)
	k := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "plain", "acls": []string{"api-key:endpoint:*"}}, 200)
	st, _, raw = d.Do(t, "POST", "/v1/billing/teams/default/usage", k["apiKey"].(string), req("TIME_UNIT_NONE", "UTC", start, end, values...))
	require.Equal(t, 403, st, "%s", raw)
	st, _, raw = d.Do(t, "POST", "/v1/billing/teams/default/usage", d.OwnerKey, req("TIME_UNIT_NONE", "Europe/Atlantis", start, end, values...))
	require.Equal(t, 400, st, "%s", raw)
	_, param, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "analyticsRequest.timeRange.timezone", param)
}
