package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmts holds the statements of the hot paths (a call record's upsert),
// each prepared once. database/sql prepares a *sql.Stmt again on each
// connection it runs on and keeps it there, and Tx.StmtContext reuses the
// connection's copy, so the SQL is parsed once per connection instead of
// once per write: the SQLite driver has no statement cache of its own, and
// parsing the upsert of a call record cost more than running it. pgx's
// database/sql adapter caches statements per connection itself; on
// PostgreSQL this saves its lookup and keeps one code path.
//
// Only fixed query strings go here (the cache is never evicted).
type stmts struct {
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	closed bool
}

// errStoreClosed is the error of a statement asked of a closed store.
var errStoreClosed = errors.New("store closed")

// get returns the statement of query, preparing it on first use.
func (c *stmts) get(ctx context.Context, s *DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errStoreClosed
	}
	if st := c.m[query]; st != nil {
		return st, nil
	}
	q := query
	if s.dialect == dialectPostgres {
		q = rebind(q)
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// close closes every statement; get fails from then on.
func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// execPrepared runs query, one of the hot paths' fixed statements, with
// args: prepared once, run in the DB's transaction when it has one.
func (s *DB) execPrepared(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := s.stmts.get(ctx, s, query)
	if err != nil {
		return nil, err
	}
	if s.dialect == dialectPostgres {
		args = pgArgs(args)
	}
	if s.tx != nil {
		st = s.tx.StmtContext(ctx, st)
		defer st.Close()
	}
	return st.ExecContext(ctx, args...)
}

// queryRowPrepared runs query, one of the hot paths' fixed reads, with
// args: prepared once, run in the DB's transaction when it has one. When
// the statement cannot be prepared the query runs as any other, so that
// its error comes with the row.
func (s *DB) queryRowPrepared(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.stmts.get(ctx, s, query)
	if err != nil {
		return s.q.QueryRowContext(ctx, query, args...)
	}
	if s.dialect == dialectPostgres {
		args = pgArgs(args)
	}
	if s.tx != nil {
		st = s.tx.StmtContext(ctx, st) // closed with the transaction
	}
	return st.QueryRowContext(ctx, args...)
}

// execBatch runs query (a fixed statement) once for each of n argument
// lists in one transaction (the DB's own, when it is in one): one commit,
// and the statement is looked up once, for the whole batch.
func (s *DB) execBatch(ctx context.Context, query string, n int, args func(i int) []any) error {
	st, err := s.stmts.get(ctx, s, query)
	if err != nil {
		return err
	}
	tx := s.tx
	if tx == nil {
		if tx, err = s.db.BeginTx(ctx, nil); err != nil {
			return err
		}
	}
	txst := tx.StmtContext(ctx, st)
	defer txst.Close()
	for i := range n {
		a := args(i)
		if s.dialect == dialectPostgres {
			a = pgArgs(a)
		}
		if _, err := txst.ExecContext(ctx, a...); err != nil {
			if s.tx == nil {
				tx.Rollback()
			}
			return err
		}
	}
	if s.tx != nil {
		return nil
	}
	return tx.Commit()
}
