package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQLite is the embedded Store: one database file in the data directory.
type SQLite struct {
	db *sql.DB
	q  querier
}

var _ Store = (*SQLite)(nil)

// DBFile is the database's file name inside the data directory.
const DBFile = "switchboard.db"

// OpenSQLite opens (creating when needed) the database in dataDir, switches
// it to WAL mode and applies every embedded migration not applied yet.
func OpenSQLite(ctx context.Context, dataDir string) (*SQLite, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	path := filepath.Join(dataDir, DBFile)
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s := &SQLite{db: db, q: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	return s, nil
}

// migrate applies migrations/NNNN_name.sql in order, each in its own
// transaction, recording the version in schema_migrations.
func (s *SQLite) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)`); err != nil {
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
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, v).Scan(&n); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile(f)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_us) VALUES (?, ?, strftime('%s','now')*1000000)`, v, name); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return nil
}

// SchemaVersion reports the newest applied migration.
func (s *SQLite) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// Keys returns the API key store.
func (s *SQLite) Keys() KeyStore { return sqlKeys{s.q} }

// Agents returns the agent store.
func (s *SQLite) Agents() AgentStore { return sqlAgents{s.q} }

// Numbers returns the phone-number store.
func (s *SQLite) Numbers() NumberStore { return sqlNumbers{s.q} }

// Audit returns the audit log.
func (s *SQLite) Audit() AuditStore { return sqlAudit{s.q} }

// Calls returns the call records.
func (s *SQLite) Calls() CallStore { return sqlCalls{s.q} }

// ClientSecrets returns the client secret store.
func (s *SQLite) ClientSecrets() ClientSecretStore { return sqlClientSecrets{s.q} }

// Tx runs fn in one transaction. Nested calls join the outer transaction.
func (s *SQLite) Tx(ctx context.Context, fn func(Store) error) error {
	if _, inTx := s.q.(*sql.Tx); inTx {
		return fn(s)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(&SQLite{db: s.db, q: tx}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Ping checks the database answers.
func (s *SQLite) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the database; it is safe to call more than once.
func (s *SQLite) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	if errors.Is(err, sql.ErrConnDone) {
		return nil
	}
	return err
}

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
