package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors every implementation returns, wrapped with context.
var (
	// ErrNotFound means no record has the given identity.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique field (a phone number, a key hash) is taken.
	ErrConflict = errors.New("conflict")
	// ErrBadPageToken means a page token was not issued by this store.
	ErrBadPageToken = errors.New("invalid page token")
)

// Store is the whole persistence layer, one accessor per aggregate.
type Store interface {
	Keys() KeyStore
	Agents() AgentStore
	Numbers() NumberStore
	Audit() AuditStore
	Calls() CallStore
	// ClientSecrets keeps ephemeral realtime client secrets.
	ClientSecrets() ClientSecretStore
	// Usage reads call records for usage analytics.
	Usage() UsageStore
	// Nodes is the registry of the nodes sharing the store.
	Nodes() NodeStore
	// Registrations keeps the numbers' outbound registrations and the
	// fleet's bindings.
	Registrations() RegistrationStore
	// Outbound keeps the fleet-wide state of the outbound limits.
	Outbound() OutboundStore
	// Tx runs fn against a Store whose writes commit together, or not at
	// all when fn returns an error.
	Tx(ctx context.Context, fn func(Store) error) error
	// Ping reports whether the store can serve requests.
	Ping(ctx context.Context) error
	Close() error
}

// Page asks for one page of a listing. Size 0 means the implementation's
// default page size.
type Page struct {
	Size  int
	Token string
}

// DefaultPageSize and MaxPageSize bound every listing. Pages are small
// so that no request costs much: a page of 100 call records with their
// transcripts is about 80 KB of JSON, and the API shares the CPU with the
// calls' media (the spec's own listing bound is 100).
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

func (p Page) limit() int {
	switch {
	case p.Size <= 0:
		return DefaultPageSize
	case p.Size > MaxPageSize:
		return MaxPageSize
	}
	return p.Size
}

// cursor is the position after the last row of a page: listings are ordered
// by (time, id), so a page token is those two values of the last row.
type cursor struct {
	US int64
	ID string
}

func (c cursor) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.US, 10) + "|" + c.ID))
}

func parseCursor(tok string) (*cursor, error) {
	if tok == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, ErrBadPageToken
	}
	us, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return nil, ErrBadPageToken
	}
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return nil, ErrBadPageToken
	}
	return &cursor{US: n, ID: id}, nil
}

func toUS(t time.Time) int64 { return t.UnixMicro() }

func fromUS(us int64) time.Time { return time.UnixMicro(us).UTC() }

func optUS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromOptUS(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return fromUS(*v)
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonString is s as one JSON string, quotes included, encoded as jsonList
// encodes each element.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func parseList(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	return v, nil
}

// scanner is a row being read.
type scanner interface{ Scan(...any) error }

// listPage runs a keyset-paginated query (which must select limit+1 rows)
// and returns at most limit rows and the token of the next page.
func listPage[T any](ctx context.Context, q querier, op, query string, args []any, limit int,
	scan func(scanner) (*T, error), pos func(*T) cursor) ([]*T, string, error) {
	rows, err := q.QueryContext(ctx, query+fmt.Sprintf(" LIMIT %d", limit+1), args...)
	if err != nil {
		return nil, "", mapErr(op, err)
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, "", mapErr(op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", mapErr(op, err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, pos(out[limit-1]).token(), nil
}
