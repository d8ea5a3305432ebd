package usage

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/api/httpx"
)

// Request is the body of POST /v1/billing/teams/{team_id}/usage.
type Request struct {
	AnalyticsRequest *AnalyticsRequest `json:"analyticsRequest"`
}

// AnalyticsRequest says which series to compute.
type AnalyticsRequest struct {
	TimeRange *TimeRange `json:"timeRange"`
	TimeUnit  TimeUnit   `json:"timeUnit"`
	Values    []Value    `json:"values"`
	GroupBy   []string   `json:"groupBy"`
	Filters   []string   `json:"filters"`
}

// TimeRange is [StartTime, EndTime) as wall times ("2006-01-02 15:04:05")
// in Timezone (an IANA name; empty means UTC).
type TimeRange struct {
	StartTime string `json:"startTime"`
	EndTime   string `json:"endTime"`
	Timezone  string `json:"timezone"`
}

// Value is one number of each point: a field and an aggregation.
type Value struct {
	Name        string      `json:"name"`
	Aggregation Aggregation `json:"aggregation"`
}

// WallTimeLayout is the layout of startTime and endTime.
const WallTimeLayout = "2006-01-02 15:04:05"

// MaxValues bounds the values of a request.
const MaxValues = 16

// Query is a validated request.
type Query struct {
	Buckets *Buckets
	Values  []Value
	GroupBy []string
	Filters []Filter
}

const p = "analyticsRequest"

// Parse validates req and lays out its intervals; a series may hold at
// most maxPoints of them. Its errors are 400s (*httpx.Error) that name the
// offending field.
func Parse(req *AnalyticsRequest, maxPoints int) (*Query, error) {
	if req == nil {
		return nil, httpx.BadRequest(p, "analyticsRequest is required")
	}
	tr := req.TimeRange
	if tr == nil {
		return nil, httpx.BadRequest(p+".timeRange", "timeRange is required")
	}
	tz := tr.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := loadLocation(tz)
	if err != nil {
		return nil, httpx.BadRequest(p+".timeRange.timezone", "unknown time zone %q: use an IANA name such as America/New_York", tr.Timezone)
	}
	from, err := wallTime(p+".timeRange.startTime", tr.StartTime, loc)
	if err != nil {
		return nil, err
	}
	end, err := wallTime(p+".timeRange.endTime", tr.EndTime, loc)
	if err != nil {
		return nil, err
	}
	if !end.After(from) {
		return nil, httpx.BadRequest(p+".timeRange.endTime", "endTime must be after startTime")
	}
	q := &Query{}
	switch q.Buckets, err = NewBuckets(req.TimeUnit, from, end, loc, maxPoints); {
	case errors.Is(err, errBadUnit):
		return nil, httpx.BadRequest(p+".timeUnit", "timeUnit must be one of %s", strings.Join(unitNames(), ", "))
	case errors.Is(err, errTooManyBuckets):
		return nil, httpx.BadRequest(p+".timeUnit", "the time range holds more than %d intervals of %s: use a longer timeUnit or a shorter timeRange", maxPoints, req.TimeUnit)
	case err != nil:
		return nil, err
	}
	if len(req.Values) == 0 {
		return nil, httpx.BadRequest(p+".values", "values must name at least one field and aggregation")
	}
	if len(req.Values) > MaxValues {
		return nil, httpx.BadRequest(p+".values", "at most %d values", MaxValues)
	}
	for i, v := range req.Values {
		f := fieldNamed(v.Name)
		if f == nil {
			return nil, httpx.BadRequest(fmt.Sprintf("%s.values[%d].name", p, i), "unknown field %q (known: %s)", v.Name, strings.Join(fieldNames(), ", "))
		}
		param := fmt.Sprintf("%s.values[%d].aggregation", p, i)
		if !knownAggs[v.Aggregation] {
			return nil, httpx.BadRequest(param, "unknown aggregation %q", v.Aggregation)
		}
		if !f.supports(v.Aggregation) {
			return nil, httpx.BadRequest(param, "%s does not support %s (it supports %s)", f.Name, v.Aggregation, joinAggs(f.Aggregations))
		}
	}
	q.Values = req.Values
	seen := map[string]bool{}
	for i, g := range req.GroupBy {
		param := fmt.Sprintf("%s.groupBy[%d]", p, i)
		if dimensions[g] == nil {
			return nil, httpx.BadRequest(param, "cannot group by %q (known: %s)", g, strings.Join(dimensionNames, ", "))
		}
		if seen[g] {
			return nil, httpx.BadRequest(param, "%s is named twice", g)
		}
		seen[g] = true
	}
	q.GroupBy = req.GroupBy
	for i, s := range req.Filters {
		f, err := ParseFilter(s)
		if err != nil {
			return nil, httpx.BadRequest(fmt.Sprintf("%s.filters[%d]", p, i), "%v", err)
		}
		q.Filters = append(q.Filters, f)
	}
	return q, nil
}

// loadLocation is time.LoadLocation without the local zone (an IANA name
// is required, "Local" is the server's own zone and not one).
func loadLocation(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, errors.New("Local is not an IANA time zone")
	}
	return time.LoadLocation(name)
}

// wallTime reads a wall time of loc. A wall time that a daylight-saving
// change skips or repeats is read the way time.Date reads it (in
// America/New_York, 01:30 of the fall-back day is the first 01:30, EDT).
func wallTime(param, s string, loc *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, httpx.BadRequest(param, "%s is required", param[strings.LastIndex(param, ".")+1:])
	}
	t, err := time.ParseInLocation(WallTimeLayout, s, loc)
	if err != nil {
		return time.Time{}, httpx.BadRequest(param, "%q is not a time of the form YYYY-MM-DD HH:MM:SS", s)
	}
	return t, nil
}

func unitNames() []string {
	return []string{string(TimeUnitMonth), string(TimeUnitCalendarWeek), string(TimeUnitDay), string(TimeUnitHour),
		string(TimeUnitQuarterHour), string(TimeUnitMinute), string(TimeUnitSecond), string(TimeUnitNone)}
}

func fieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

func joinAggs(as []Aggregation) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return strings.Join(out, ", ")
}
