package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL runs through pgx's database/sql adapter rather than pgx's own
// interface: database/sql is what the SQLite store speaks, so every query,
// scan and transaction is written once for both, and database/sql's value
// conversions (an integer column scanned into a bool, NULL into a pointer)
// behave the same on both. What differs is confined to pgQuerier.

// Pool bounds for one node: a node's queries are short, and a fleet of
// nodes shares the server's max_connections (100 by default).
const (
	pgMaxOpenConns    = 16
	pgMaxIdleConns    = 4
	pgConnMaxIdleTime = 5 * time.Minute
)

// OpenPostgres connects to the PostgreSQL database at url
// (postgres://user:password@host:port/dbname?sslmode=…) and applies every
// embedded migration not applied yet; nodes starting together serialize
// on an advisory lock.
func OpenPostgres(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(pgMaxOpenConns)
	db.SetMaxIdleConns(pgMaxIdleConns)
	db.SetConnMaxIdleTime(pgConnMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store: connect to postgres at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	s := newDB(db, dialectPostgres)
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// pgQuerier runs the store's queries on PostgreSQL: ? and ?N placeholders
// become $N, and bool arguments become 0/1 because the schema keeps
// booleans in INTEGER columns (as SQLite does).
type pgQuerier struct{ q querier }

func (p pgQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.q.ExecContext(ctx, rebind(query), pgArgs(args)...)
}

func (p pgQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.q.QueryContext(ctx, rebind(query), pgArgs(args)...)
}

func (p pgQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.q.QueryRowContext(ctx, rebind(query), pgArgs(args)...)
}

func pgArgs(args []any) []any {
	var out []any
	for i, a := range args {
		b, ok := a.(bool)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = int64(0)
		if b {
			out[i] = int64(1)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// rebind rewrites ? placeholders as $1, $2, … in order, and ?N as $N,
// leaving quoted strings and identifiers alone.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			b.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			b.WriteByte(c)
		case c == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			b.WriteByte('$')
			if j > i+1 {
				b.WriteString(query[i+1 : j])
				i = j - 1
			} else {
				n++
				b.WriteString(strconv.Itoa(n))
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
