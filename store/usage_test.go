package store

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCallSpansSelectsInvitedAndOverlapping(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	from := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	const never = -1 << 62
	mk := func(id, team string, inv, ans, end time.Duration) {
		c := &Call{ID: id, TeamID: team, PhoneNumber: "+18005550100", Route: "echo", State: "ended", EndedBy: "caller",
			InviteTime: from.Add(inv)}
		if ans != never {
			c.AnswerTime = from.Add(ans)
		}
		c.EndTime = from.Add(end)
		require.NoError(t, s.Calls().Create(ctx, c))
	}
	mk("inside", "default", 10*time.Minute, 10*time.Minute, 20*time.Minute)
	mk("unanswered", "default", 5*time.Minute, never, 6*time.Minute)
	mk("crosses-start", "default", -10*time.Minute, -9*time.Minute, 5*time.Minute)
	mk("crosses-both", "default", -2*time.Hour, -2*time.Hour, 2*time.Hour)
	mk("ended-before", "default", -2*time.Hour, -2*time.Hour, -time.Minute)
	mk("ended-at-start", "default", -2*time.Hour, -2*time.Hour, 0)
	mk("unanswered-before", "default", -10*time.Minute, never, 5*time.Minute)
	mk("at-end", "default", time.Hour, time.Hour, 2*time.Hour)
	mk("other-team", "other", 10*time.Minute, 10*time.Minute, 20*time.Minute)

	spans, err := s.Usage().CallSpans(ctx, "default", from, to)
	require.NoError(t, err)
	var got []string
	for _, c := range spans {
		got = append(got, c.InviteTime.Sub(from).String()+"/"+c.EndTime.Sub(from).String())
	}
	sort.Strings(got)
	require.Equal(t, []string{"-10m0s/5m0s", "-2h0m0s/2h0m0s", "10m0s/20m0s", "5m0s/6m0s"}, got)
	for _, c := range spans {
		if c.InviteTime.Equal(from.Add(5 * time.Minute)) {
			require.True(t, c.AnswerTime.IsZero(), "a call never answered has no answer time")
		}
		require.Equal(t, "+18005550100", c.PhoneNumber)
		require.Equal(t, "echo", c.Route)
		require.Equal(t, "caller", c.EndedBy)
	}
}

// TestCallSpansUsesIndexes keeps both halves of the query on an index: a
// usage query must not read every record of the team.
func TestCallSpansUsesIndexes(t *testing.T) {
	onSQLite(t)
	s := openTest(t, t.TempDir())
	rows, err := s.db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN SELECT phone_number FROM calls WHERE team_id = ?1 AND invite_us >= ?2 AND invite_us < ?3
		UNION ALL
		SELECT phone_number FROM calls WHERE team_id = ?1 AND end_us > ?2 AND invite_us < ?2 AND answer_us IS NOT NULL AND answer_us < ?3`, "t", 1, 2)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	all := strings.Join(plan, "\n")
	require.Contains(t, all, "calls_team_invite", all)
	require.Contains(t, all, "calls_team_end", all)
	require.NotContains(t, all, "SCAN calls\n", all)
}
