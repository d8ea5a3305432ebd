package store

import (
	"context"
	"encoding/json"
	"time"
)

// Call is the record of a finished phone call. Media and Notes are JSON
// owned by the calls package (the RTP statistics and the ordered entries
// of the record), so the store needs no migration when they grow.
type Call struct {
	ID            string // the call id
	TeamID        string
	PhoneNumberID string
	PhoneNumber   string // E.164
	From, To      string // SIP user parts
	SIPCallID     string
	Route         string // "agent:<id>", "webhook:<id>", "echo"
	State         string
	InviteTime    time.Time
	AnswerTime    time.Time // zero: never answered
	EndTime       time.Time // zero: not ended
	EndedBy       string
	EndReason     string
	Media         json.RawMessage
	Notes         json.RawMessage
}

// CallQuery filters a call listing; every set field must match.
type CallQuery struct {
	PhoneNumberID string
	PhoneNumber   string
	State         string
	From, To      string
	// Since and Until bound the invite time: Since <= invite < Until.
	Since, Until time.Time
	Page         Page
}

type sqlCalls struct{ q querier }

const callCols = `id, team_id, phone_number_id, phone_number, from_user, to_user, sip_call_id, route, state,
	invite_us, answer_us, end_us, ended_by, end_reason, media, notes`

func scanCall(row scanner) (*Call, error) {
	var (
		c            Call
		inv          int64
		ans, end     *int64
		media, notes string
	)
	if err := row.Scan(&c.ID, &c.TeamID, &c.PhoneNumberID, &c.PhoneNumber, &c.From, &c.To, &c.SIPCallID, &c.Route, &c.State,
		&inv, &ans, &end, &c.EndedBy, &c.EndReason, &media, &notes); err != nil {
		return nil, err
	}
	c.InviteTime, c.AnswerTime, c.EndTime = fromUS(inv), fromOptUS(ans), fromOptUS(end)
	c.Media, c.Notes = json.RawMessage(media), json.RawMessage(notes)
	return &c, nil
}

func jsonOr(v json.RawMessage, empty string) string {
	if len(v) == 0 {
		return empty
	}
	return string(v)
}

func (s sqlCalls) Create(ctx context.Context, c *Call) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO calls(`+callCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		c.ID, c.TeamID, c.PhoneNumberID, c.PhoneNumber, c.From, c.To, c.SIPCallID, c.Route, c.State,
		toUS(c.InviteTime), optUS(c.AnswerTime), optUS(c.EndTime), c.EndedBy, c.EndReason,
		jsonOr(c.Media, "{}"), jsonOr(c.Notes, "[]"))
	return mapErr("create call", err)
}

func (s sqlCalls) Get(ctx context.Context, id string) (*Call, error) {
	c, err := scanCall(s.q.QueryRowContext(ctx, `SELECT `+callCols+` FROM calls WHERE id = ?`, id))
	return c, mapErr("get call", err)
}

// List orders newest first: by invite time, then id, both descending; the
// page token is the position of the last call returned.
func (s sqlCalls) List(ctx context.Context, teamID string, q CallQuery) ([]*Call, string, error) {
	where, args := `team_id = ?`, []any{teamID}
	for _, f := range []struct{ col, v string }{
		{"phone_number_id", q.PhoneNumberID}, {"phone_number", q.PhoneNumber}, {"state", q.State},
		{"from_user", q.From}, {"to_user", q.To},
	} {
		if f.v != "" {
			where += ` AND ` + f.col + ` = ?`
			args = append(args, f.v)
		}
	}
	if !q.Since.IsZero() {
		where += ` AND invite_us >= ?`
		args = append(args, toUS(q.Since))
	}
	if !q.Until.IsZero() {
		where += ` AND invite_us < ?`
		args = append(args, toUS(q.Until))
	}
	c, err := parseCursor(q.Page.Token)
	if err != nil {
		return nil, "", err
	}
	if c != nil {
		where += ` AND (invite_us < ? OR (invite_us = ? AND id < ?))`
		args = append(args, c.US, c.US, c.ID)
	}
	return listPage(ctx, s.q, "list calls", `SELECT `+callCols+` FROM calls WHERE `+where+` ORDER BY invite_us DESC, id DESC`,
		args, q.Page.limit(), scanCall, func(c *Call) cursor { return cursor{US: toUS(c.InviteTime), ID: c.ID} })
}
