package usage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func wall(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation(WallTimeLayout, s, loc)
	require.NoError(t, err)
	return v
}

func utcStrings(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return out
}

func TestBucketsAlignInTheTimeZone(t *testing.T) {
	ny, kolkata, santiago := mustLoc(t, "America/New_York"), mustLoc(t, "Asia/Kolkata"), mustLoc(t, "America/Santiago")
	tests := []struct {
		name       string
		unit       TimeUnit
		loc        *time.Location
		from, end  string
		wantStarts []string
	}{
		{"days across spring forward (23 h day)", TimeUnitDay, ny, "2024-03-09 00:00:00", "2024-03-12 00:00:00",
			[]string{"2024-03-09T05:00:00Z", "2024-03-10T05:00:00Z", "2024-03-11T04:00:00Z"}},
		{"days across fall back (25 h day)", TimeUnitDay, ny, "2024-11-02 12:00:00", "2024-11-04 12:00:00",
			[]string{"2024-11-02T04:00:00Z", "2024-11-03T04:00:00Z", "2024-11-04T05:00:00Z"}},
		{"hours across spring forward: no 02:00", TimeUnitHour, ny, "2024-03-10 00:00:00", "2024-03-10 05:00:00",
			[]string{"2024-03-10T05:00:00Z", "2024-03-10T06:00:00Z", "2024-03-10T07:00:00Z", "2024-03-10T08:00:00Z"}},
		{"hours across fall back: 01:00 twice", TimeUnitHour, ny, "2024-11-03 00:00:00", "2024-11-03 04:00:00",
			[]string{"2024-11-03T04:00:00Z", "2024-11-03T05:00:00Z", "2024-11-03T06:00:00Z", "2024-11-03T07:00:00Z", "2024-11-03T08:00:00Z"}},
		{"hours of a half-hour zone start on the local hour", TimeUnitHour, kolkata, "2024-05-01 10:15:00", "2024-05-01 12:00:00",
			[]string{"2024-05-01T04:30:00Z", "2024-05-01T05:30:00Z"}},
		{"quarter hours", TimeUnitQuarterHour, kolkata, "2024-05-01 10:20:00", "2024-05-01 10:50:00",
			[]string{"2024-05-01T04:45:00Z", "2024-05-01T05:00:00Z", "2024-05-01T05:15:00Z"}},
		{"minutes", TimeUnitMinute, time.UTC, "2024-05-01 10:00:30", "2024-05-01 10:02:00",
			[]string{"2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z"}},
		{"seconds", TimeUnitSecond, time.UTC, "2024-05-01 10:00:00", "2024-05-01 10:00:03",
			[]string{"2024-05-01T10:00:00Z", "2024-05-01T10:00:01Z", "2024-05-01T10:00:02Z"}},
		{"ISO weeks start on Monday, across a new year", TimeUnitCalendarWeek, ny, "2025-01-01 00:00:00", "2025-01-14 00:00:00",
			[]string{"2024-12-30T05:00:00Z", "2025-01-06T05:00:00Z", "2025-01-13T05:00:00Z"}},
		{"a Sunday belongs to the week of the Monday before", TimeUnitCalendarWeek, time.UTC, "2024-05-05 23:00:00", "2024-05-06 01:00:00",
			[]string{"2024-04-29T00:00:00Z", "2024-05-06T00:00:00Z"}},
		{"months, DST inside", TimeUnitMonth, ny, "2024-01-15 00:00:00", "2024-04-01 00:00:00",
			[]string{"2024-01-01T05:00:00Z", "2024-02-01T05:00:00Z", "2024-03-01T05:00:00Z"}},
		{"months of a leap year end", TimeUnitMonth, time.UTC, "2024-02-29 12:00:00", "2024-03-01 00:00:01",
			[]string{"2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"}},
		{"a day without midnight (Santiago springs forward at 24:00)", TimeUnitDay, santiago, "2022-09-10 00:00:00", "2022-09-12 00:00:00",
			[]string{"2022-09-10T04:00:00Z", "2022-09-11T04:00:00Z"}},
		{"none: one interval stamped startTime", TimeUnitNone, ny, "2024-03-09 10:30:00", "2024-04-09 00:00:00",
			[]string{"2024-03-09T15:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, end := wall(t, tt.loc, tt.from), wall(t, tt.loc, tt.end)
			b, err := NewBuckets(tt.unit, from, end, tt.loc, 1000)
			require.NoError(t, err)
			require.Equal(t, tt.wantStarts, utcStrings(b.Starts))
			// The intervals cover [from, end) exactly, without gaps.
			var total time.Duration
			for i := range b.Starts {
				lo, hi := b.bounds(i)
				require.True(t, hi.After(lo), "interval %d is not empty", i)
				total += hi.Sub(lo)
			}
			require.Equal(t, end.Sub(from), total)
		})
	}
}

func TestBucketsDSTDayLengths(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	b, err := NewBuckets(TimeUnitDay, wall(t, ny, "2024-03-09 00:00:00"), wall(t, ny, "2024-03-12 00:00:00"), ny, 10)
	require.NoError(t, err)
	var hours []float64
	for i := range b.Starts {
		lo, hi := b.bounds(i)
		hours = append(hours, hi.Sub(lo).Hours())
	}
	require.Equal(t, []float64{24, 23, 24}, hours)
	b, err = NewBuckets(TimeUnitHour, wall(t, ny, "2024-11-03 00:00:00"), wall(t, ny, "2024-11-04 00:00:00"), ny, 100)
	require.NoError(t, err)
	require.Equal(t, 25, b.Len(), "the fall-back day has 25 hours")
}

func TestBucketsRefuse(t *testing.T) {
	from := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	_, err := NewBuckets(TimeUnitSecond, from, from.Add(3*time.Hour), time.UTC, 10000)
	require.ErrorIs(t, err, errTooManyBuckets)
	b, err := NewBuckets(TimeUnitSecond, from, from.Add(10000*time.Second), time.UTC, 10000)
	require.NoError(t, err, "exactly the limit is allowed")
	require.Equal(t, 10000, b.Len())
	for _, u := range []TimeUnit{TimeUnitInvalid, "", "TIME_UNIT_YEAR", "hour"} {
		_, err := NewBuckets(u, from, from.Add(time.Hour), time.UTC, 10)
		require.ErrorIs(t, err, errBadUnit, u)
	}
}

func TestBucketsIndexAndSplit(t *testing.T) {
	from := time.Date(2024, 5, 1, 10, 30, 0, 0, time.UTC)
	b, err := NewBuckets(TimeUnitHour, from, from.Add(3*time.Hour), time.UTC, 10) // 10:00 11:00 12:00 13:00
	require.NoError(t, err)
	require.Equal(t, 4, b.Len())
	require.Equal(t, -1, b.Index(from.Add(-time.Second)), "before startTime, even inside the first interval")
	require.Equal(t, 0, b.Index(from))
	require.Equal(t, 1, b.Index(from.Add(30*time.Minute)))
	require.Equal(t, 3, b.Index(from.Add(3*time.Hour-time.Nanosecond)))
	require.Equal(t, -1, b.Index(from.Add(3*time.Hour)), "endTime is exclusive")

	got := map[int]time.Duration{}
	b.Split(from.Add(-time.Hour), from.Add(90*time.Minute), func(i int, d time.Duration) { got[i] += d })
	require.Equal(t, map[int]time.Duration{0: 30 * time.Minute, 1: time.Hour}, got, "cut at startTime, split at 11:00")
	got = map[int]time.Duration{}
	b.Split(from.Add(120*time.Minute), from.Add(5*time.Hour), func(i int, d time.Duration) { got[i] += d })
	require.Equal(t, map[int]time.Duration{2: 30 * time.Minute, 3: 30 * time.Minute}, got, "cut at endTime")
	b.Split(from.Add(-2*time.Hour), from.Add(-time.Hour), func(int, time.Duration) { t.Fatal("outside the range") })
	b.Split(from.Add(time.Hour), from.Add(time.Hour), func(int, time.Duration) { t.Fatal("empty span") })
}

// TestBucketsEveryZoneAYear walks a year of days and hours in zones with
// unusual changes (half-hour DST, midnight skipped, 45-minute offsets):
// intervals increase, cover the range exactly and start on the local
// boundary whenever that boundary exists.
func TestBucketsEveryZoneAYear(t *testing.T) {
	zones := []string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Chatham", "America/Santiago",
		"Asia/Beirut", "Asia/Kolkata", "America/St_Johns", "UTC"}
	for _, z := range zones {
		loc := mustLoc(t, z)
		from, end := time.Date(2022, 1, 1, 0, 0, 0, 0, loc), time.Date(2023, 1, 1, 0, 0, 0, 0, loc)
		for _, u := range []TimeUnit{TimeUnitMonth, TimeUnitCalendarWeek, TimeUnitDay, TimeUnitHour} {
			b, err := NewBuckets(u, from, end, loc, 10000)
			require.NoError(t, err, "%s %s", z, u)
			var total time.Duration
			for i, s := range b.Starts {
				if i > 0 {
					require.True(t, s.After(b.Starts[i-1]), "%s %s: interval %d", z, u, i)
				}
				lo, hi := b.bounds(i)
				total += hi.Sub(lo)
				l := s.In(loc)
				switch u {
				case TimeUnitDay, TimeUnitCalendarWeek, TimeUnitMonth:
					if l.Hour() != 0 || l.Minute() != 0 {
						// Only where midnight does not exist: the second before is another day.
						require.NotEqual(t, l.Day(), s.Add(-time.Second).In(loc).Day(), "%s %s: %s", z, u, l)
					}
					if u == TimeUnitCalendarWeek && i > 0 {
						require.Equal(t, time.Monday, l.Weekday(), "%s: %s", z, l)
					}
					if u == TimeUnitMonth {
						require.Equal(t, 1, l.Day(), "%s: %s", z, l)
					}
				case TimeUnitHour:
					if l.Minute() != 0 {
						// Lord Howe's half-hour change starts an interval off the hour.
						require.Equal(t, "Australia/Lord_Howe", z, "%s", l)
					}
				}
			}
			require.Equal(t, end.Sub(from), total, "%s %s", z, u)
		}
	}
}
