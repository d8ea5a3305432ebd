package usage

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// TimeUnit is the width of the intervals of a time series, as spelled in
// the request.
type TimeUnit string

// The time units of the request. TimeUnitInvalid is refused.
const (
	TimeUnitInvalid      TimeUnit = "TIME_UNIT_INVALID"
	TimeUnitMonth        TimeUnit = "TIME_UNIT_MONTH"
	TimeUnitCalendarWeek TimeUnit = "TIME_UNIT_CALENDAR_WEEK"
	TimeUnitDay          TimeUnit = "TIME_UNIT_DAY"
	TimeUnitHour         TimeUnit = "TIME_UNIT_HOUR"
	TimeUnitQuarterHour  TimeUnit = "TIME_UNIT_QUARTER_HOUR"
	TimeUnitMinute       TimeUnit = "TIME_UNIT_MINUTE"
	TimeUnitSecond       TimeUnit = "TIME_UNIT_SECOND"
	TimeUnitNone         TimeUnit = "TIME_UNIT_NONE"
)

// clockStep is the width of the units aligned on the local clock.
var clockStep = map[TimeUnit]time.Duration{
	TimeUnitHour: time.Hour, TimeUnitQuarterHour: 15 * time.Minute, TimeUnitMinute: time.Minute, TimeUnitSecond: time.Second,
}

// valid reports whether u is a unit a series can use.
func (u TimeUnit) valid() bool {
	switch u {
	case TimeUnitMonth, TimeUnitCalendarWeek, TimeUnitDay, TimeUnitNone:
		return true
	}
	_, ok := clockStep[u]
	return ok
}

var (
	errTooManyBuckets = errors.New("too many intervals")
	errBadUnit        = errors.New("invalid time unit")
	errBadZone        = errors.New("time zone without progress")
)

// Buckets are the intervals of a series: interval i covers
// [Starts[i], Starts[i+1]) (the last one up to End), cut to [From, End).
type Buckets struct {
	Starts    []time.Time
	From, End time.Time
}

// NewBuckets returns the intervals of unit that cover [from, end), aligned
// in loc. More than max intervals is errTooManyBuckets.
func NewBuckets(unit TimeUnit, from, end time.Time, loc *time.Location, max int) (*Buckets, error) {
	if !unit.valid() {
		return nil, fmt.Errorf("%w %q", errBadUnit, unit)
	}
	b := &Buckets{From: from, End: end}
	if unit == TimeUnitNone {
		b.Starts = []time.Time{from}
		return b, nil
	}
	for t := align(unit, from, loc); t.Before(end); {
		if len(b.Starts) == max {
			return nil, fmt.Errorf("%w: more than %d", errTooManyBuckets, max)
		}
		b.Starts = append(b.Starts, t)
		n := next(unit, t, loc)
		if !n.After(t) {
			return nil, fmt.Errorf("%w: no interval after %s in %s", errBadZone, t, loc)
		}
		t = n
	}
	return b, nil
}

// align returns the start of the interval of unit that holds t, in loc.
func align(unit TimeUnit, t time.Time, loc *time.Location) time.Time {
	lt := t.In(loc)
	y, m, d := lt.Date()
	switch unit {
	case TimeUnitMonth:
		return dayStart(y, m, 1, loc)
	case TimeUnitCalendarWeek:
		back := (int(lt.Weekday()) + 6) % 7 // days since Monday
		return dayStart(y, m, d-back, loc)
	case TimeUnitDay:
		return dayStart(y, m, d, loc)
	}
	// Units of the clock: truncate the local wall time, then go back by the
	// offset in force at t. An hour after a daylight-saving change starts at
	// the change, and the repeated hour of a fall-back is an interval of
	// its own.
	step := int64(clockStep[unit] / time.Second)
	_, off := lt.Zone()
	wall := t.Unix() + int64(off)
	wall -= ((wall % step) + step) % step
	return time.Unix(wall-int64(off), 0).In(loc)
}

// dayStart returns the first instant of a day in loc (y, m, d are
// normalized as time.Date does). It is midnight, except where a
// daylight-saving change skips midnight (America/Santiago, Asia/Beirut):
// time.Date then reads 00:00 with the offset before the change, an instant
// of the day before, and the day starts at the change instead.
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	want := time.Date(y, m, d, 0, 0, 0, 0, time.UTC) // the normalized date
	if sameDate(t, want) {
		return t
	}
	// Find the first second whose local date is the wanted day: no zone
	// moves its clock by more than a day.
	lo, hi := t.Unix(), t.Add(26*time.Hour).Unix()
	for lo < hi {
		mid := lo + (hi-lo)/2
		if !reached(time.Unix(mid, 0).In(loc), want) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return time.Unix(lo, 0).In(loc)
}

// sameDate reports whether t (in its location) falls on the date of day.
func sameDate(t, day time.Time) bool {
	y, m, d := t.Date()
	yy, mm, dd := day.Date()
	return y == yy && m == mm && d == dd
}

// reached reports whether the local date of t is day's date or later.
func reached(t, day time.Time) bool {
	y, m, d := t.Date()
	return !time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Before(day)
}

// next returns the start of the interval after the one starting at t.
func next(unit TimeUnit, t time.Time, loc *time.Location) time.Time {
	lt := t.In(loc)
	y, m, d := lt.Date()
	switch unit {
	case TimeUnitMonth:
		return dayStart(y, m+1, 1, loc)
	case TimeUnitCalendarWeek:
		return dayStart(y, m, d+7, loc)
	case TimeUnitDay:
		return dayStart(y, m, d+1, loc)
	}
	step := clockStep[unit]
	if n := align(unit, t.Add(step), loc); n.After(t) {
		return n
	}
	return t.Add(step)
}

// Len is the number of intervals.
func (b *Buckets) Len() int { return len(b.Starts) }

// bounds returns interval i cut to [From, End).
func (b *Buckets) bounds(i int) (time.Time, time.Time) {
	lo, hi := b.Starts[i], b.End
	if i+1 < len(b.Starts) {
		hi = b.Starts[i+1]
	}
	if lo.Before(b.From) {
		lo = b.From
	}
	return lo, hi
}

// Index returns the interval that holds t, or -1 when t is outside
// [From, End).
func (b *Buckets) Index(t time.Time) int {
	if t.Before(b.From) || !t.Before(b.End) {
		return -1
	}
	return sort.Search(len(b.Starts), func(i int) bool { return b.Starts[i].After(t) }) - 1
}

// Split calls fn with each interval that [from, to) overlaps and the
// length of the overlap.
func (b *Buckets) Split(from, to time.Time, fn func(i int, d time.Duration)) {
	if from.Before(b.From) {
		from = b.From
	}
	if to.After(b.End) {
		to = b.End
	}
	if !from.Before(to) {
		return
	}
	for i := b.Index(from); i >= 0 && i < len(b.Starts); i++ {
		lo, hi := b.bounds(i)
		if !lo.Before(to) {
			return
		}
		if lo.Before(from) {
			lo = from
		}
		if hi.After(to) {
			hi = to
		}
		if hi.After(lo) {
			fn(i, hi.Sub(lo))
		}
	}
}
