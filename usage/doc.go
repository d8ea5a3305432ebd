// Package usage answers POST /v1/billing/teams/{team_id}/usage: time
// series of a team's call usage (call minutes, calls, answered calls, call
// durations), read from the stored call records. Records are written when
// a call ends, so a call in progress counts once it has ended.
//
// A request names a time range (wall times in an IANA time zone, the end
// exclusive), a time unit, the values to compute (a field and an
// aggregation each), the fields to group by and filters. The answer holds
// one series per group tuple and, in each, one point per interval of the
// unit, zeros included (dense).
//
// Intervals are aligned in the requested time zone: days start at local
// midnight (a daylight-saving day lasts 23 or 25 hours), calendar weeks on
// Monday (ISO 8601), months on the 1st, hours and shorter units on the
// local clock. The first point is stamped with the start of the interval
// that holds startTime, but only what happens from startTime on is counted;
// likewise the last interval is cut at endTime. TIME_UNIT_NONE gives one
// interval, stamped startTime.
//
// Fields (see [Fields]):
//   - call_minutes: answered minutes (answer to end of ended calls). A call
//     that spans intervals is split between them by time, so the minutes of
//     the intervals add up to the minutes of the range. AGGREGATION_SUM.
//   - calls: calls, counted in the interval of their invite.
//     AGGREGATION_COUNT.
//   - answered_calls: answered calls, counted in the interval of their
//     invite (so answered_calls/calls is the answer rate of the interval).
//     AGGREGATION_COUNT.
//   - call_duration_seconds: the duration of each answered, ended call,
//     in the interval of its answer. AGGREGATION_COUNT, SUM, AVG, MIN, MAX,
//     VAR and STD (population), P50, P90, P99 and P999 (nearest rank).
//
// An interval without samples is 0 for every aggregation. Other
// combinations (and AGGREGATION_NONE and COUNT_DISTINCT) are refused with
// a 400 naming analyticsRequest.values[i].aggregation.
//
// groupBy takes phone_number, route and ended_by. filters take the form
// field="value" or field!="value" over the same fields, the value a
// double-quoted string with backslash escapes; filters combine with AND.
//
// The answer holds at most Options.MaxPoints points (intervals × series).
// A request with more intervals than that is refused (400 on timeUnit);
// when the series would pass it, the series with the largest first value
// (summed over the range) are kept and limitReached is true.
package usage
