package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

type sqlNumbers struct {
	q  querier
	db *DB
}

const numberCols = `id, team_id, phone_number, name, origin, agent_id, webhook_id, auth_username, auth_password_enc,
	allowed_addresses, inbound_trunk_id, create_us, update_us, dtmf_inband, recording, srtp, codecs,
	outbound_uri, outbound_username, outbound_password_enc, outbound_caller_id, context_url, context_timeout_ms,
	stream_url, stream_protocol, stream_track, stream_parameters, stream_fallback_agent_id, stream_auth_token_enc, stream_signing_secret_enc`

func scanNumber(row scanner) (*PhoneNumber, error) {
	var (
		n                  PhoneNumber
		agentID, webhookID sql.NullString
		allowed, codecs    string
		streamParams       string
		cUS, uUS           int64
		recording          int64
		ctxTimeout         int64
	)
	if err := row.Scan(&n.ID, &n.TeamID, &n.PhoneNumber, &n.Name, &n.Origin, &agentID, &webhookID, &n.AuthUsername,
		&n.AuthPasswordEnc, &allowed, &n.InboundTrunkID, &cUS, &uUS, &n.DTMFInband, &recording, &n.SRTP, &codecs,
		&n.Outbound.URI, &n.Outbound.Username, &n.Outbound.PasswordEnc, &n.Outbound.CallerID, &n.ContextURL, &ctxTimeout,
		&n.Stream.URL, &n.Stream.Protocol, &n.Stream.Track, &streamParams, &n.Stream.FallbackAgentID, &n.Stream.AuthTokenEnc, &n.Stream.SecretEnc); err != nil {
		return nil, err
	}
	var err error
	if n.AllowedAddresses, err = parseList(allowed); err != nil {
		return nil, err
	}
	n.AgentID, n.WebhookID, n.Recording = agentID.String, webhookID.String, recording != 0
	n.ContextTimeoutMS = int(ctxTimeout)
	if codecs != "" {
		n.Codecs = strings.Split(codecs, ",")
	}
	if streamParams != "" {
		if err := json.Unmarshal([]byte(streamParams), &n.Stream.Parameters); err != nil {
			return nil, fmt.Errorf("decode stream parameters: %w", err)
		}
	}
	n.CreateTime, n.UpdateTime = fromUS(cUS), fromUS(uUS)
	return &n, nil
}

func (s sqlNumbers) Create(ctx context.Context, n *PhoneNumber, w *Webhook) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO phone_numbers(`+numberCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		n.ID, n.TeamID, n.PhoneNumber, n.Name, n.Origin, nullStr(n.AgentID), nullStr(n.WebhookID), n.AuthUsername,
		n.AuthPasswordEnc, jsonList(n.AllowedAddresses), n.InboundTrunkID, toUS(n.CreateTime), toUS(n.UpdateTime), n.DTMFInband, boolInt(n.Recording), n.SRTP, strings.Join(n.Codecs, ","),
		n.Outbound.URI, n.Outbound.Username, n.Outbound.PasswordEnc, n.Outbound.CallerID, n.ContextURL, n.ContextTimeoutMS,
		n.Stream.URL, n.Stream.Protocol, n.Stream.Track, jsonParams(n.Stream.Parameters), n.Stream.FallbackAgentID, n.Stream.AuthTokenEnc, n.Stream.SecretEnc)
	if err != nil {
		return mapErr("create phone number", err)
	}
	if w != nil {
		return s.PutWebhook(ctx, w)
	}
	return nil
}

func (s sqlNumbers) Get(ctx context.Context, id string) (*PhoneNumber, error) {
	n, err := scanNumber(s.q.QueryRowContext(ctx, `SELECT `+numberCols+` FROM phone_numbers WHERE id = ?`, id))
	return n, mapErr("get phone number", err)
}

func (s sqlNumbers) ByNumber(ctx context.Context, e164 string) (*PhoneNumber, error) {
	n, err := scanNumber(s.q.QueryRowContext(ctx, `SELECT `+numberCols+` FROM phone_numbers WHERE phone_number = ?`, e164))
	return n, mapErr("find phone number", err)
}

// routeNumberSQL reads a number and its webhook: once per INVITE, so it
// is prepared once.
var routeNumberSQL = `SELECT ` + prefixCols("n.", numberCols) + `,
		w.id, w.phone_number_id, w.name, w.url, w.auth_url, w.auth_token_enc, w.signing_secret_enc, w.create_us
		FROM phone_numbers n LEFT JOIN webhooks w ON w.phone_number_id = n.id WHERE n.phone_number = ?`

func (s sqlNumbers) Route(ctx context.Context, e164 string) (*PhoneNumber, *Webhook, error) {
	var (
		w                                   Webhook
		wID, wNumber, wName, wURL, wAuthURL sql.NullString
		wTokenEnc, wSecretEnc               sql.NullString
		wCreate                             sql.NullInt64
	)
	row := s.db.queryRowPrepared(ctx, routeNumberSQL, e164)
	n, err := scanNumber(extraScan{row, []any{&wID, &wNumber, &wName, &wURL, &wAuthURL, &wTokenEnc, &wSecretEnc, &wCreate}})
	if err != nil {
		return nil, nil, mapErr("route phone number", err)
	}
	if !wID.Valid {
		return n, nil, nil
	}
	w = Webhook{ID: wID.String, PhoneNumberID: wNumber.String, Name: wName.String, URL: wURL.String, AuthURL: wAuthURL.String,
		AuthTokenEnc: wTokenEnc.String, SigningSecretEnc: wSecretEnc.String, CreateTime: fromUS(wCreate.Int64)}
	return n, &w, nil
}

// extraScan appends more destinations to a row scanned by a scanX
// function, for a query that selects a record's columns and then others.
type extraScan struct {
	row   scanner
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra...)...) }

// prefixCols qualifies each column of a comma-separated list with prefix.
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func (s sqlNumbers) List(ctx context.Context, teamID string, p Page) ([]*PhoneNumber, string, error) {
	where, args, err := pageArgs(`team_id = ?`, []any{teamID}, p, "create_us")
	if err != nil {
		return nil, "", err
	}
	return listPage(ctx, s.q, "list phone numbers", `SELECT `+numberCols+` FROM phone_numbers WHERE `+where+` ORDER BY create_us, id`,
		args, p.limit(), scanNumber, func(n *PhoneNumber) cursor { return cursor{US: toUS(n.CreateTime), ID: n.ID} })
}

func (s sqlNumbers) Update(ctx context.Context, n *PhoneNumber) error {
	res, err := s.q.ExecContext(ctx, `UPDATE phone_numbers SET phone_number=?, name=?, agent_id=?, webhook_id=?, auth_username=?,
		auth_password_enc=?, allowed_addresses=?, update_us=?, dtmf_inband=?, recording=?, srtp=?, codecs=?,
		outbound_uri=?, outbound_username=?, outbound_password_enc=?, outbound_caller_id=?, context_url=?, context_timeout_ms=?,
		stream_url=?, stream_protocol=?, stream_track=?, stream_parameters=?, stream_fallback_agent_id=?, stream_auth_token_enc=?,
		stream_signing_secret_enc=? WHERE id=?`,
		n.PhoneNumber, n.Name, nullStr(n.AgentID), nullStr(n.WebhookID), n.AuthUsername, n.AuthPasswordEnc,
		jsonList(n.AllowedAddresses), toUS(n.UpdateTime), n.DTMFInband, boolInt(n.Recording), n.SRTP, strings.Join(n.Codecs, ","),
		n.Outbound.URI, n.Outbound.Username, n.Outbound.PasswordEnc, n.Outbound.CallerID, n.ContextURL, n.ContextTimeoutMS,
		n.Stream.URL, n.Stream.Protocol, n.Stream.Track, jsonParams(n.Stream.Parameters), n.Stream.FallbackAgentID, n.Stream.AuthTokenEnc,
		n.Stream.SecretEnc, n.ID)
	return affected("update phone number", res, err)
}

func (s sqlNumbers) Delete(ctx context.Context, id string) error {
	res, err := s.q.ExecContext(ctx, `DELETE FROM phone_numbers WHERE id = ?`, id)
	return affected("delete phone number", res, err)
}

func (s sqlNumbers) CountByAgent(ctx context.Context, agentID string) (int, error) {
	var n int
	err := s.q.QueryRowContext(ctx, `SELECT COUNT(*) FROM phone_numbers WHERE agent_id = ? OR stream_fallback_agent_id = ?`, agentID, agentID).Scan(&n)
	return n, mapErr("count phone numbers", err)
}

const webhookCols = `id, phone_number_id, name, url, auth_url, auth_token_enc, signing_secret_enc, create_us`

func (s sqlNumbers) Webhook(ctx context.Context, numberID string) (*Webhook, error) {
	var (
		w   Webhook
		cUS int64
	)
	err := s.q.QueryRowContext(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE phone_number_id = ?`, numberID).
		Scan(&w.ID, &w.PhoneNumberID, &w.Name, &w.URL, &w.AuthURL, &w.AuthTokenEnc, &w.SigningSecretEnc, &cUS)
	if err != nil {
		return nil, mapErr("get webhook", err)
	}
	w.CreateTime = fromUS(cUS)
	return &w, nil
}

func (s sqlNumbers) PutWebhook(ctx context.Context, w *Webhook) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO webhooks(`+webhookCols+`) VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT(phone_number_id) DO UPDATE SET id=excluded.id, name=excluded.name, url=excluded.url,
		auth_url=excluded.auth_url, auth_token_enc=excluded.auth_token_enc, signing_secret_enc=excluded.signing_secret_enc`,
		w.ID, w.PhoneNumberID, w.Name, w.URL, w.AuthURL, w.AuthTokenEnc, w.SigningSecretEnc, toUS(w.CreateTime))
	return mapErr("put webhook", err)
}

func (s sqlNumbers) DeleteWebhook(ctx context.Context, numberID string) error {
	res, err := s.q.ExecContext(ctx, `DELETE FROM webhooks WHERE phone_number_id = ?`, numberID)
	return affected("delete webhook", res, err)
}

// boolInt stores a boolean as the 0 or 1 both databases accept.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// jsonParams is a stream's parameters as a JSON object ("" for none).
func jsonParams(p map[string]string) string {
	if len(p) == 0 {
		return ""
	}
	b, _ := json.Marshal(p)
	return string(b)
}
