package usage

import (
	"time"

	"switchboard/store"
)

// Field is a value a request can compute.
type Field struct {
	// Name is the field's name in the request.
	Name string
	// Description is one line for the docs.
	Description string
	// Aggregations are the aggregations the field supports.
	Aggregations []Aggregation
	// observe adds the samples of one call to the intervals of b.
	observe func(c *store.CallSpan, b *Buckets, add func(i int, v float64))
}

// supports reports whether f supports agg.
func (f *Field) supports(agg Aggregation) bool {
	for _, a := range f.Aggregations {
		if a == agg {
			return true
		}
	}
	return false
}

// answered reports whether c was answered and has ended.
func answered(c *store.CallSpan) bool {
	return !c.AnswerTime.IsZero() && !c.EndTime.IsZero() && c.EndTime.After(c.AnswerTime)
}

var fields = []*Field{
	{
		Name:         "call_minutes",
		Description:  "answered minutes (answer to end), split between the intervals a call spans",
		Aggregations: []Aggregation{AggSum},
		observe: func(c *store.CallSpan, b *Buckets, add func(int, float64)) {
			if answered(c) {
				b.Split(c.AnswerTime, c.EndTime, func(i int, d time.Duration) { add(i, d.Minutes()) })
			}
		},
	},
	{
		Name:         "calls",
		Description:  "calls, in the interval of their invite",
		Aggregations: []Aggregation{AggCount},
		observe: func(c *store.CallSpan, b *Buckets, add func(int, float64)) {
			if i := b.Index(c.InviteTime); i >= 0 {
				add(i, 1)
			}
		},
	},
	{
		Name:         "answered_calls",
		Description:  "answered calls, in the interval of their invite",
		Aggregations: []Aggregation{AggCount},
		observe: func(c *store.CallSpan, b *Buckets, add func(int, float64)) {
			if i := b.Index(c.InviteTime); i >= 0 && !c.AnswerTime.IsZero() {
				add(i, 1)
			}
		},
	},
	{
		Name:        "call_duration_seconds",
		Description: "duration of each answered, ended call (answer to end), in the interval of its answer",
		Aggregations: []Aggregation{AggCount, AggSum, AggAvg, AggMin, AggMax, AggVar, AggStd,
			AggP50, AggP90, AggP99, AggP999},
		observe: func(c *store.CallSpan, b *Buckets, add func(int, float64)) {
			if i := b.Index(c.AnswerTime); i >= 0 && answered(c) {
				add(i, c.EndTime.Sub(c.AnswerTime).Seconds())
			}
		},
	},
}

// Fields returns the fields a request can compute, in documentation
// order.
func Fields() []Field {
	out := make([]Field, len(fields))
	for i, f := range fields {
		out[i] = *f
		out[i].Aggregations = append([]Aggregation(nil), f.Aggregations...)
	}
	return out
}

func fieldNamed(name string) *Field {
	for _, f := range fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// dimensions are the fields a request can group and filter by.
var dimensions = map[string]func(*store.CallSpan) string{
	"phone_number": func(c *store.CallSpan) string { return c.PhoneNumber },
	"route":        func(c *store.CallSpan) string { return c.Route },
	"ended_by":     func(c *store.CallSpan) string { return c.EndedBy },
}

// dimensionNames is the documentation order of dimensions.
var dimensionNames = []string{"phone_number", "route", "ended_by"}
