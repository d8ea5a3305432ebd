package usage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/api"
	"switchboard/api/httpx"
	"switchboard/store"
	"switchboard/usage"
)

// keys is an Authorizer of fixed tokens: "mgmt" is a management key of
// team "default", "plain" an API key of the same team, "other" a
// management key of team "other".
type keys struct{}

func (keys) Authorize(_ context.Context, token string, rt httpx.Route) (*httpx.Principal, error) {
	p := map[string]*httpx.Principal{
		"mgmt":  {KeyID: "k1", TeamID: "default", Management: true},
		"plain": {KeyID: "k2", TeamID: "default"},
		"other": {KeyID: "k3", TeamID: "other", Management: true},
	}[token]
	switch {
	case p == nil:
		return nil, httpx.Unauthorized("invalid API key")
	case rt.Access == httpx.Management && !p.Management:
		return nil, httpx.Forbidden("this endpoint needs a management key")
	}
	return p, nil
}

func serve(t *testing.T) (string, *store.SQLite) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	srv := api.New(zerolog.Nop(), keys{}, []api.Module{usage.NewService(st.Usage(), usage.Options{})})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, hs.Close())
		require.ErrorIs(t, <-done, http.ErrServerClosed)
		http.DefaultClient.CloseIdleConnections()
	})
	return "http://" + ln.Addr().String(), st
}

func post(t *testing.T, base, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

func errParam(t *testing.T, raw []byte) string {
	t.Helper()
	var eb struct {
		Error struct{ Code, Param, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &eb), "%s", raw)
	require.NotEmpty(t, eb.Error.Code, "%s", raw)
	return eb.Error.Param
}

func TestUsageOverHTTP(t *testing.T) {
	base, st := serve(t)
	ctx := context.Background()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	day := time.Date(2024, 3, 10, 0, 0, 0, 0, ny) // 23 hours long
	add := func(id, team, number string, inv time.Time, answered, dur time.Duration) {
		c := &store.Call{ID: id, TeamID: team, PhoneNumber: number, Route: "echo", State: "ended", EndedBy: "caller",
			InviteTime: inv, AnswerTime: inv.Add(answered), EndTime: inv.Add(answered + dur)}
		require.NoError(t, st.Calls().Create(ctx, c))
	}
	add("c1", "default", "+18005550100", day.Add(time.Hour), time.Second, 2*time.Minute) // 01:00 EST
	add("c2", "default", "+18005550100", day.Add(3*time.Hour), time.Second, time.Minute) // 04:00 EDT
	add("c3", "default", "+18005550101", day.Add(3*time.Hour), time.Second, 3*time.Minute)
	add("c4", "other", "+18005550100", day.Add(3*time.Hour), time.Second, time.Hour)

	body := map[string]any{"analyticsRequest": map[string]any{
		"timeRange": map[string]any{"startTime": "2024-03-10 00:00:00", "endTime": "2024-03-11 00:00:00", "timezone": "America/New_York"},
		"timeUnit":  "TIME_UNIT_HOUR",
		"values":    []map[string]any{{"name": "call_minutes", "aggregation": "AGGREGATION_SUM"}, {"name": "calls", "aggregation": "AGGREGATION_COUNT"}},
		"groupBy":   []string{"phone_number"},
		"filters":   []string{`ended_by="caller"`},
	}}
	st200, raw := post(t, base, "POST", "/v1/billing/teams/default/usage", "mgmt", body)
	require.Equal(t, 200, st200, "%s", raw)
	var out usage.Response
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	require.False(t, out.LimitReached)
	require.Len(t, out.TimeSeries, 2)
	a, b := out.TimeSeries[0], out.TimeSeries[1]
	require.Equal(t, []string{"+18005550100"}, a.Group)
	require.Equal(t, []string{"phone_number"}, a.GroupLabels)
	require.Len(t, a.DataPoints, 23, "the spring-forward day has 23 hourly points")
	require.Equal(t, "2024-03-10T05:00:00Z", a.DataPoints[0].Timestamp)
	require.Equal(t, "2024-03-10T06:00:00Z", a.DataPoints[1].Timestamp)
	require.Equal(t, "2024-03-10T07:00:00Z", a.DataPoints[2].Timestamp, "03:00 EDT follows 01:00 EST")
	require.Equal(t, []float64{2, 1}, a.DataPoints[1].Values)
	require.Equal(t, []float64{1, 1}, a.DataPoints[3].Values, "04:00 EDT is 08:00Z")
	require.Equal(t, []float64{0, 0}, a.DataPoints[0].Values, "dense zeros")
	require.Equal(t, []float64{3, 1}, b.DataPoints[3].Values)

	// The raw JSON has the spec's names.
	var generic map[string]any
	require.NoError(t, json.Unmarshal(raw, &generic))
	require.Contains(t, generic, "timeSeries")
	require.Contains(t, generic, "limitReached")
	ts := generic["timeSeries"].([]any)[0].(map[string]any)
	require.Contains(t, ts, "group")
	require.Contains(t, ts, "groupLabels")
	require.Contains(t, ts["dataPoints"].([]any)[0].(map[string]any), "timestamp")

	// Another team's usage is not found; the other team sees only its call.
	status, raw := post(t, base, "POST", "/v1/billing/teams/other/usage", "mgmt", body)
	require.Equal(t, 404, status, "%s", raw)
	status, raw = post(t, base, "POST", "/v1/billing/teams/other/usage", "other", body)
	require.Equal(t, 200, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Len(t, out.TimeSeries, 1)
	pts := out.TimeSeries[0].DataPoints
	require.InDelta(t, 60-1.0/60, pts[3].Values[0], 1e-9, "answered at 04:00:01 EDT: split at 05:00")
	require.InDelta(t, 1.0/60, pts[4].Values[0], 1e-9)
	require.Equal(t, []float64{1}, pts[3].Values[1:])

	// A key without management rights, and no key.
	status, _ = post(t, base, "POST", "/v1/billing/teams/default/usage", "plain", body)
	require.Equal(t, 403, status)
	status, _ = post(t, base, "POST", "/v1/billing/teams/default/usage", "", body)
	require.Equal(t, 401, status)
	status, _ = post(t, base, "GET", "/v1/billing/teams/default/usage", "mgmt", nil)
	require.Equal(t, 405, status)

	// Bad requests name their field.
	for _, tt := range []struct {
		body  any
		param string
	}{
		{`{}`, "analyticsRequest"},
		{`{"analyticsRequest":{"timeUnit":"TIME_UNIT_DAY","extra":1}}`, "extra"},
		{`{"analyticsRequest":{"timeUnit":7}}`, "analyticsRequest.timeUnit"},
		{`{"analyticsRequest":{"timeRange":{"startTime":"2024-03-10 00:00:00","endTime":"2024-03-11 00:00:00","timezone":"Nowhere/City"},"timeUnit":"TIME_UNIT_DAY","values":[{"name":"calls","aggregation":"AGGREGATION_COUNT"}]}}`,
			"analyticsRequest.timeRange.timezone"},
		{`{"analyticsRequest":{"timeRange":{"startTime":"2024-03-10 00:00:00","endTime":"2024-03-11 00:00:00"},"timeUnit":"TIME_UNIT_INVALID","values":[{"name":"calls","aggregation":"AGGREGATION_COUNT"}]}}`,
			"analyticsRequest.timeUnit"},
		{`{"analyticsRequest":{"timeRange":{"startTime":"2024-03-10 00:00:00","endTime":"2024-03-11 00:00:00"},"timeUnit":"TIME_UNIT_DAY","values":[{"name":"calls","aggregation":"AGGREGATION_P50"}]}}`,
			"analyticsRequest.values[0].aggregation"},
		{`{"analyticsRequest":{"timeRange":{"startTime":"2024-03-10 00:00:00","endTime":"2024-03-11 00:00:00"},"timeUnit":"TIME_UNIT_DAY","values":[{"name":"calls","aggregation":"AGGREGATION_COUNT"}],"filters":["route=echo"]}}`,
			"analyticsRequest.filters[0]"},
	} {
		status, raw := post(t, base, "POST", "/v1/billing/teams/default/usage", "mgmt", tt.body)
		require.Equal(t, 400, status, "%v: %s", tt.body, raw)
		require.Equal(t, tt.param, errParam(t, raw), "%v: %s", tt.body, raw)
	}
}

// failing is a Spans whose store is down.
type failing struct{}

func (failing) CallSpans(context.Context, string, time.Time, time.Time) ([]store.CallSpan, error) {
	return nil, errors.New("disk on fire")
}

func TestUsageStoreErrorIsA500WithoutDetails(t *testing.T) {
	srv := api.New(zerolog.Nop(), keys{}, []api.Module{usage.NewService(failing{}, usage.Options{})})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	status, raw := post(t, "http://"+ln.Addr().String(), "POST", "/v1/billing/teams/default/usage", "mgmt",
		`{"analyticsRequest":{"timeRange":{"startTime":"2024-03-10 00:00:00","endTime":"2024-03-11 00:00:00"},"timeUnit":"TIME_UNIT_DAY","values":[{"name":"calls","aggregation":"AGGREGATION_COUNT"}]}}`)
	require.Equal(t, 500, status)
	require.NotContains(t, string(raw), "fire")
}
