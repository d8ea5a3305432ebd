package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Call is the record of a phone call, written when the call is admitted
// and updated as it goes; EndTime is zero while it is open. Media and
// Notes are JSON owned by the calls package (the RTP statistics and the
// ordered entries of the record), so the store needs no migration when
// they grow.
type Call struct {
	ID            string // the call id
	TeamID        string
	PhoneNumberID string
	PhoneNumber   string // E.164
	From, To      string // SIP user parts
	SIPCallID     string
	Route         string // "agent:<id>", "webhook:<id>", "session"
	// Channel is "sip" (a phone) or "webrtc" (a browser).
	Channel    string
	State      string
	InviteTime time.Time
	AnswerTime time.Time // zero: never answered
	EndTime    time.Time // zero: not ended
	// AliveTime is the last time the call was known to be up (zero:
	// unknown); an open record left by a crash is closed at that time.
	AliveTime time.Time
	EndedBy   string
	EndReason string
	Media     json.RawMessage
	Notes     json.RawMessage
	// NodeID is the node that holds (or held) the call; "" before fleets.
	NodeID string
	// Direction is "inbound" (answered) or "outbound" (placed).
	Direction string
	// Progress is how far an outbound call's dial got (dialing, ringing,
	// answered, busy, no-answer, failed, canceled); SIPStatus the final
	// status of its INVITE (0: none yet).
	Progress  string
	SIPStatus int
	// MachineDetection is an outbound call's answering-machine detection
	// (off, detect, hangup_on_machine); AnsweredBy what it heard (human,
	// machine, unknown; "" before it decided, or without detection).
	MachineDetection string
	AnsweredBy       string
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

// CloseOpen says how CloseOpen ends the open call records it selects:
// those of the nodes named in Nodes, or every open record when it is empty.
type CloseOpen struct {
	Nodes []string

	State   string // the closed record's state ("ended")
	EndedBy string // e.g. "crash"
	Reason  string
}

type sqlCalls struct {
	q  querier
	db *DB
}

const callCols = `id, team_id, phone_number_id, phone_number, from_user, to_user, sip_call_id, route, state,
	invite_us, answer_us, end_us, ended_by, end_reason, media, notes, alive_us, node_id, channel,
	direction, progress, sip_status, machine_detection, answered_by`

func scanCall(row scanner) (*Call, error) {
	var (
		c            Call
		inv, alive   int64
		ans, end     *int64
		media, notes string
	)
	if err := row.Scan(&c.ID, &c.TeamID, &c.PhoneNumberID, &c.PhoneNumber, &c.From, &c.To, &c.SIPCallID, &c.Route, &c.State,
		&inv, &ans, &end, &c.EndedBy, &c.EndReason, &media, &notes, &alive, &c.NodeID, &c.Channel,
		&c.Direction, &c.Progress, &c.SIPStatus, &c.MachineDetection, &c.AnsweredBy); err != nil {
		return nil, err
	}
	if alive != 0 {
		c.AliveTime = fromUS(alive)
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
	_, err := s.q.ExecContext(ctx, `INSERT INTO calls(`+callCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, callArgs(c)...)
	return mapErr("create call", err)
}

func callArgs(c *Call) []any {
	var alive int64
	if !c.AliveTime.IsZero() {
		alive = toUS(c.AliveTime)
	}
	return []any{c.ID, c.TeamID, c.PhoneNumberID, c.PhoneNumber, c.From, c.To, c.SIPCallID, c.Route, c.State,
		toUS(c.InviteTime), optUS(c.AnswerTime), optUS(c.EndTime), c.EndedBy, c.EndReason,
		jsonOr(c.Media, "{}"), jsonOr(c.Notes, "[]"), alive, c.NodeID, channelOr(c.Channel),
		directionOr(c.Direction), c.Progress, c.SIPStatus, c.MachineDetection, c.AnsweredBy}
}

// channelOr is a call's channel, "sip" when unset.
func channelOr(ch string) string {
	if ch == "" {
		return "sip"
	}
	return ch
}

// directionOr is a call's direction, "inbound" when unset.
func directionOr(d string) string {
	if d == "" {
		return "inbound"
	}
	return d
}

// putCallSQL inserts a record or, while the stored one is still open,
// replaces it; a closed record is final (a late write of an older view
// cannot reopen it). ON CONFLICT … DO UPDATE … WHERE is common to SQLite
// and PostgreSQL.
const putCallSQL = `INSERT INTO calls(` + callCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET team_id = excluded.team_id, phone_number_id = excluded.phone_number_id,
		phone_number = excluded.phone_number, from_user = excluded.from_user, to_user = excluded.to_user,
		sip_call_id = excluded.sip_call_id, route = excluded.route, state = excluded.state,
		invite_us = excluded.invite_us, answer_us = excluded.answer_us, end_us = excluded.end_us,
		ended_by = excluded.ended_by, end_reason = excluded.end_reason, media = excluded.media,
		notes = excluded.notes, alive_us = excluded.alive_us, node_id = excluded.node_id, channel = excluded.channel,
		direction = excluded.direction, progress = excluded.progress, sip_status = excluded.sip_status,
		machine_detection = excluded.machine_detection, answered_by = excluded.answered_by
		WHERE calls.end_us IS NULL`

// Put inserts the record or, while the stored one is still open, replaces
// it (putCallSQL), with the statement prepared once.
func (s sqlCalls) Put(ctx context.Context, c *Call) error {
	_, err := s.db.execPrepared(ctx, putCallSQL, callArgs(c)...)
	return mapErr("put call", err)
}

// PutAll puts every record as Put does, in one transaction: all are
// stored, or none. The records' ids must differ (a batch holds each call
// once, in its latest state).
func (s sqlCalls) PutAll(ctx context.Context, cs []*Call) error {
	switch len(cs) {
	case 0:
		return nil
	case 1:
		return s.Put(ctx, cs[0])
	}
	err := s.db.execBatch(ctx, putCallSQL, len(cs), func(i int) []any { return callArgs(cs[i]) })
	return mapErr("put calls", err)
}

// Touch sets the alive time of the open records among ids. The ids are
// sent in chunks that stay far below any driver's parameter limit.
func (s sqlCalls) Touch(ctx context.Context, ids []string, at time.Time) error {
	const chunk = 200
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		args := make([]any, 0, n+1)
		args = append(args, toUS(at))
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		q := `UPDATE calls SET alive_us = ? WHERE end_us IS NULL AND id IN (?` + strings.Repeat(",?", n-1) + `)`
		if _, err := s.q.ExecContext(ctx, q, args...); err != nil {
			return mapErr("touch calls", err)
		}
		ids = ids[n:]
	}
	return nil
}

// CloseOpen ends every open record at its last known time: the alive time
// when it is set and not before the invite, else the invite time.
func (s sqlCalls) CloseOpen(ctx context.Context, q CloseOpen) (int, error) {
	where, args := `end_us IS NULL`, []any{q.State, q.EndedBy, q.Reason}
	if len(q.Nodes) > 0 {
		where += ` AND node_id IN (?` + strings.Repeat(",?", len(q.Nodes)-1) + `)`
		for _, n := range q.Nodes {
			args = append(args, n)
		}
	}
	res, err := s.q.ExecContext(ctx, `UPDATE calls SET state = ?, ended_by = ?, end_reason = ?,
		end_us = CASE WHEN alive_us > invite_us THEN alive_us ELSE invite_us END
		WHERE `+where, args...)
	if err != nil {
		return 0, mapErr("close open calls", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, mapErr("close open calls", err)
	}
	return int(n), nil
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
