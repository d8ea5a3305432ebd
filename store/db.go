package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// querier is what *sql.DB, *sql.Conn and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// dialect names the database behind a DB. The queries are the same for
// both; the dialect only decides placeholder syntax, argument encoding and
// error codes (see pgQuerier), plus the one string function SQL lacks a
// common name for.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

func (d dialect) String() string {
	if d == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// DB is the Store over database/sql: one implementation of every query,
// run on SQLite (embedded) or PostgreSQL (a fleet). Queries are written
// once with ? placeholders; on PostgreSQL a thin querier rewrites them.
type DB struct {
	db      *sql.DB
	q       querier
	dialect dialect
	inTx    bool
	// tx is the transaction of a DB made by Tx (nil outside one).
	tx *sql.Tx
	// stmts are the hot paths' statements, prepared once (prepared.go);
	// shared by the DBs that Tx makes.
	stmts *stmts
}

// SQLite is the name the store had before PostgreSQL joined it; it is the
// same type.
type SQLite = DB

var _ Store = (*DB)(nil)

// Open opens the store a configuration names: PostgreSQL when databaseURL
// is a postgres:// or postgresql:// URL, otherwise the embedded SQLite
// database in dataDir.
func Open(ctx context.Context, databaseURL, dataDir string) (*DB, error) {
	switch {
	case databaseURL == "":
		return OpenSQLite(ctx, dataDir)
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return OpenPostgres(ctx, databaseURL)
	}
	return nil, fmt.Errorf("open store: database url must start with postgres:// (empty: SQLite in the data directory)")
}

func newDB(db *sql.DB, d dialect) *DB {
	s := &DB{db: db, dialect: d, stmts: &stmts{m: map[string]*sql.Stmt{}}}
	s.q = s.wrap(db)
	return s
}

// wrap adapts a connection, pool or transaction to the dialect.
func (s *DB) wrap(q querier) querier {
	if s.dialect == dialectPostgres {
		return pgQuerier{q}
	}
	return q
}

// Dialect is "sqlite" or "postgres".
func (s *DB) Dialect() string { return s.dialect.String() }

// bigintRE finds the INTEGER type in migrations: it means a 64-bit integer
// in SQLite (microsecond times need it), which PostgreSQL calls BIGINT.
var bigintRE = regexp.MustCompile(`(?i)\bINTEGER\b`)

// migrationLockID is the PostgreSQL advisory lock that keeps two nodes
// starting at once from applying the same migration twice.
const migrationLockID = 0x5357_4244 // "SWBD"

// migrate applies migrations/NNNN_name.sql in order, each in its own
// transaction, recording the version in schema_migrations.
func (s *DB) migrate(ctx context.Context) error {
	conn, err := s.firstConn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if s.dialect == dialectPostgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockID); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockID)
	}
	// In a transaction of its own: on SQLite that is BEGIN IMMEDIATE, which
	// waits for a process creating the same new database (busy_timeout),
	// where a plain statement that read the schema first fails at once
	// with SQLITE_BUSY once the other has written it.
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := s.wrap(tx).ExecContext(ctx, s.ddl(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)`)); err != nil {
		tx.Rollback()
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Strings(files)
	seen := map[int]string{}
	for _, f := range files {
		name := filepath.Base(f)
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("migrate: bad file name %s", name)
		}
		if other, dup := seen[v]; dup {
			return fmt.Errorf("migrate: %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		body, err := migrations.ReadFile(f)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if err := s.apply(ctx, conn, v, name, string(body)); err != nil {
			return err
		}
	}
	return nil
}

// firstConn opens the connection that migrates. Two processes opening a
// new SQLite database at once both switch it to WAL (a connection's
// pragma), which needs the database to itself: the one that finds the
// other there gets SQLITE_BUSY at once, without waiting out busy_timeout,
// so it tries again, for as long as busy_timeout would have waited.
func (s *DB) firstConn(ctx context.Context) (*sql.Conn, error) {
	deadline := time.Now().Add(sqliteBusyTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		conn, err := s.db.Conn(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// apply runs one migration unless it is recorded already. The check is in
// the migration's own transaction (SQLite takes its write lock at BEGIN),
// so two processes opening a new database together apply it once.
func (s *DB) apply(ctx context.Context, conn *sql.Conn, v int, name, body string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	q := s.wrap(tx)
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, v).Scan(&n); err != nil || n > 0 {
		tx.Rollback()
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		return nil
	}
	if _, err := q.ExecContext(ctx, s.ddl(body)); err != nil {
		tx.Rollback()
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_us) VALUES (?, ?, ?)`,
		v, name, toUS(time.Now())); err != nil {
		tx.Rollback()
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	return nil
}

// ddl adapts a migration to the dialect: only the width of INTEGER differs.
func (s *DB) ddl(body string) string {
	if s.dialect == dialectPostgres {
		return bigintRE.ReplaceAllString(body, "BIGINT")
	}
	return body
}

// SchemaVersion reports the newest applied migration.
func (s *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.q.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// contains is the SQL condition "column col holds the substring of the
// next argument", case-sensitive on both dialects (LIKE is not on SQLite).
func (s *DB) contains(col string) string {
	if s.dialect == dialectPostgres {
		return "strpos(" + col + ", ?) > 0"
	}
	return "instr(" + col + ", ?) > 0"
}

// Keys returns the API key store.
func (s *DB) Keys() KeyStore { return sqlKeys{s.q, s} }

// Agents returns the agent store.
func (s *DB) Agents() AgentStore { return sqlAgents{s.q, s} }

// Numbers returns the phone-number store.
func (s *DB) Numbers() NumberStore { return sqlNumbers{s.q, s} }

// Audit returns the audit log.
func (s *DB) Audit() AuditStore { return sqlAudit{s.q} }

// Calls returns the call records.
func (s *DB) Calls() CallStore { return sqlCalls{s.q, s} }

// ClientSecrets returns the client secret store.
func (s *DB) ClientSecrets() ClientSecretStore { return sqlClientSecrets{s.q} }

// Tx runs fn in one transaction. Nested calls join the outer transaction.
func (s *DB) Tx(ctx context.Context, fn func(Store) error) error {
	if s.inTx {
		return fn(s)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(&DB{db: s.db, q: s.wrap(tx), dialect: s.dialect, inTx: true, tx: tx, stmts: s.stmts}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", mapErr("commit", err))
	}
	return nil
}

// Ping checks the database answers.
func (s *DB) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the database; it is safe to call more than once.
func (s *DB) Close() error {
	if s.db == nil {
		return nil
	}
	s.stmts.close()
	err := s.db.Close()
	if errors.Is(err, sql.ErrConnDone) {
		return nil
	}
	return err
}

// pgUniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const pgUniqueViolation = "23505"

// mapErr turns driver errors into the store's sentinels.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", op, ErrConflict)
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgUniqueViolation {
		return fmt.Errorf("%s: %w", op, ErrConflict)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func affected(op string, res sql.Result, err error) error {
	if err != nil {
		return mapErr(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return nil
}

// pageArgs appends the keyset condition of a page token.
func pageArgs(where string, args []any, p Page, timeCol string) (string, []any, error) {
	c, err := parseCursor(p.Token)
	if err != nil {
		return "", nil, err
	}
	if c != nil {
		where += fmt.Sprintf(" AND (%s > ? OR (%s = ? AND id > ?))", timeCol, timeCol)
		args = append(args, c.US, c.US, c.ID)
	}
	return where, args, nil
}
