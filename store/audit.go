package store

import (
	"context"
	"strings"
)

type sqlAudit struct{ q querier }

const auditCols = `id, team_id, user_id, key_id, action, resource, description, time_us`

func scanAudit(row scanner) (*AuditEvent, error) {
	var (
		e  AuditEvent
		us int64
	)
	if err := row.Scan(&e.ID, &e.TeamID, &e.UserID, &e.KeyID, &e.Action, &e.Resource, &e.Description, &us); err != nil {
		return nil, err
	}
	e.Time = fromUS(us)
	return &e, nil
}

func (s sqlAudit) Append(ctx context.Context, e *AuditEvent) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO audit_events(`+auditCols+`) VALUES (?,?,?,?,?,?,?,?)`,
		e.ID, e.TeamID, e.UserID, e.KeyID, e.Action, e.Resource, e.Description, toUS(e.Time))
	return mapErr("append audit event", err)
}

// List orders by event time, then by id, in either direction; the page
// token is the position of the last event returned.
func (s sqlAudit) List(ctx context.Context, teamID string, q AuditQuery) ([]*AuditEvent, string, error) {
	where, args := `team_id = ?`, []any{teamID}
	if q.UserID != "" {
		where += ` AND user_id = ?`
		args = append(args, q.UserID)
	}
	if q.EventID != "" {
		where += ` AND id = ?`
		args = append(args, q.EventID)
	}
	if q.Query != "" {
		// LOWER on both sides: LIKE ignores ASCII case on SQLite only.
		where += ` AND (LOWER(description) LIKE LOWER(?) ESCAPE '\' OR LOWER(action) LIKE LOWER(?) ESCAPE '\')`
		pat := "%" + likeEscape(q.Query) + "%"
		args = append(args, pat, pat)
	}
	if !q.From.IsZero() {
		where += ` AND time_us >= ?`
		args = append(args, toUS(q.From))
	}
	if !q.To.IsZero() {
		where += ` AND time_us < ?`
		args = append(args, toUS(q.To))
	}
	c, err := parseCursor(q.Page.Token)
	if err != nil {
		return nil, "", err
	}
	order, cmp := `time_us, id`, ">"
	if q.Descending {
		order, cmp = `time_us DESC, id DESC`, "<"
	}
	if c != nil {
		where += ` AND (time_us ` + cmp + ` ? OR (time_us = ? AND id ` + cmp + ` ?))`
		args = append(args, c.US, c.US, c.ID)
	}
	return listPage(ctx, s.q, "list audit events", `SELECT `+auditCols+` FROM audit_events WHERE `+where+` ORDER BY `+order,
		args, q.Page.limit(), scanAudit, func(e *AuditEvent) cursor { return cursor{US: toUS(e.Time), ID: e.ID} })
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
