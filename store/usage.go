package store

import (
	"context"
	"time"
)

// CallSpan is the part of a call record that usage analytics reads.
type CallSpan struct {
	PhoneNumber string // E.164
	Route       string
	EndedBy     string
	InviteTime  time.Time
	AnswerTime  time.Time // zero: never answered
	EndTime     time.Time // zero: not ended
}

// UsageStore reads call records for usage analytics.
type UsageStore interface {
	// CallSpans returns the team's calls that were invited in [from, to)
	// or whose answered time (answer to end) overlaps [from, to), in no
	// particular order.
	CallSpans(ctx context.Context, teamID string, from, to time.Time) ([]CallSpan, error)
}

type sqlUsage struct{ q querier }

// Usage returns the usage analytics reader.
func (s *DB) Usage() UsageStore { return sqlUsage{s.q} }

// CallSpans is two indexed range reads joined by UNION ALL: the calls
// invited in the range (calls_team_invite), and the calls invited before
// it that were still up at its start (calls_team_end). The two sets are
// disjoint, so no row is read twice.
func (s sqlUsage) CallSpans(ctx context.Context, teamID string, from, to time.Time) ([]CallSpan, error) {
	const cols = `phone_number, route, ended_by, invite_us, answer_us, end_us`
	rows, err := s.q.QueryContext(ctx, `SELECT `+cols+` FROM calls WHERE team_id = ?1 AND invite_us >= ?2 AND invite_us < ?3
		UNION ALL
		SELECT `+cols+` FROM calls WHERE team_id = ?1 AND end_us > ?2 AND invite_us < ?2 AND answer_us IS NOT NULL AND answer_us < ?3`,
		teamID, toUS(from), toUS(to))
	if err != nil {
		return nil, mapErr("call spans", err)
	}
	defer rows.Close()
	var out []CallSpan
	for rows.Next() {
		var (
			c        CallSpan
			inv      int64
			ans, end *int64
		)
		if err := rows.Scan(&c.PhoneNumber, &c.Route, &c.EndedBy, &inv, &ans, &end); err != nil {
			return nil, mapErr("call spans", err)
		}
		c.InviteTime, c.AnswerTime, c.EndTime = fromUS(inv), fromOptUS(ans), fromOptUS(end)
		out = append(out, c)
	}
	return out, mapErr("call spans", rows.Err())
}
