package usage

import (
	"slices"
	"sort"
	"strings"
	"time"

	"switchboard/store"
)

// Response is the answer of POST /v1/billing/teams/{team_id}/usage.
type Response struct {
	TimeSeries []Series `json:"timeSeries"`
	// LimitReached is true when series were left out to keep the answer
	// within the point limit.
	LimitReached bool `json:"limitReached"`
}

// Series is the time series of one group tuple.
type Series struct {
	// Group holds the values of the groupBy fields, in their order; empty
	// without groupBy.
	Group []string `json:"group"`
	// GroupLabels names the fields of Group (the request's groupBy).
	GroupLabels []string `json:"groupLabels"`
	// DataPoints has one point per interval, oldest first.
	DataPoints []DataPoint `json:"dataPoints"`
}

// DataPoint is one interval: its start (RFC 3339, UTC) and one number per
// requested value.
type DataPoint struct {
	Timestamp string    `json:"timestamp"`
	Values    []float64 `json:"values"`
}

// series is a Series being computed: acc[value][interval].
type series struct {
	group []string
	acc   [][]accum
}

// Compute answers q from the calls in spans; the answer holds at most
// maxPoints points (intervals × series).
func Compute(q *Query, spans []store.CallSpan, maxPoints int) *Response {
	b := q.Buckets
	keep := make([]bool, len(q.Values))
	for i, v := range q.Values {
		keep[i] = v.Aggregation.keepsSamples()
	}
	groups := map[string]*series{}
	get := func(c *store.CallSpan) *series {
		tuple := make([]string, len(q.GroupBy))
		for i, g := range q.GroupBy {
			tuple[i] = dimensions[g](c)
		}
		key := strings.Join(tuple, "\x00")
		s := groups[key]
		if s == nil {
			s = &series{group: tuple, acc: make([][]accum, len(q.Values))}
			for i := range s.acc {
				s.acc[i] = make([]accum, b.Len())
			}
			groups[key] = s
		}
		return s
	}
	if len(q.GroupBy) == 0 {
		get(&store.CallSpan{}) // one series even without calls (dense zeros)
	}
	for i := range spans {
		c := &spans[i]
		if !matchAll(q.Filters, c) || !touches(c, b) {
			continue
		}
		s := get(c)
		for vi, v := range q.Values {
			acc := s.acc[vi]
			fieldNamed(v.Name).observe(c, b, func(bi int, x float64) { acc[bi].add(x, keep[vi]) })
		}
	}

	out := &Response{TimeSeries: []Series{}}
	all := make([]*series, 0, len(groups))
	for _, s := range groups {
		all = append(all, s)
	}
	if limit := maxPoints / max(b.Len(), 1); len(all) > limit {
		// Keep the series that weigh most by their first value over the range.
		total := func(s *series) float64 {
			var t float64
			for i := range s.acc[0] {
				t += s.acc[0][i].result(q.Values[0].Aggregation)
			}
			return t
		}
		weights := make(map[*series]float64, len(all))
		for _, s := range all {
			weights[s] = total(s)
		}
		sort.Slice(all, func(i, j int) bool {
			if wi, wj := weights[all[i]], weights[all[j]]; wi != wj {
				return wi > wj
			}
			return slices.Compare(all[i].group, all[j].group) < 0
		})
		all, out.LimitReached = all[:limit], true
	}
	sort.Slice(all, func(i, j int) bool { return slices.Compare(all[i].group, all[j].group) < 0 })
	labels := append([]string{}, q.GroupBy...)
	for _, s := range all {
		ser := Series{Group: s.group, GroupLabels: labels, DataPoints: make([]DataPoint, b.Len())}
		for bi, start := range b.Starts {
			vals := make([]float64, len(q.Values))
			for vi, v := range q.Values {
				vals[vi] = s.acc[vi][bi].result(v.Aggregation)
			}
			ser.DataPoints[bi] = DataPoint{Timestamp: start.UTC().Format(time.RFC3339), Values: vals}
		}
		out.TimeSeries = append(out.TimeSeries, ser)
	}
	return out
}

func matchAll(fs []Filter, c *store.CallSpan) bool {
	for _, f := range fs {
		if !f.match(c) {
			return false
		}
	}
	return true
}

// touches reports whether c has anything in the range: an invite, or an
// answered time that overlaps it. Only such calls make a group.
func touches(c *store.CallSpan, b *Buckets) bool {
	if b.Index(c.InviteTime) >= 0 {
		return true
	}
	return !c.AnswerTime.IsZero() && c.AnswerTime.Before(b.End) && (c.EndTime.IsZero() || c.EndTime.After(b.From))
}
