package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DBFile is the database's file name inside the data directory.
const DBFile = "switchboard.db"

// sqliteMaxIdleConns is how many connections the SQLite pool keeps open.
const sqliteMaxIdleConns = 8

// sqliteBusyTimeout is how long a statement waits for another connection's
// lock before it fails with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// OpenSQLite opens (creating when needed) the database in dataDir, switches
// it to WAL mode and applies every embedded migration not applied yet.
func OpenSQLite(ctx context.Context, dataDir string) (*DB, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	path := filepath.Join(dataDir, DBFile)
	// busy_timeout first: switching a new database to WAL takes a lock
	// that another process opening it at the same moment may hold.
	dsn := "file:" + path + "?_pragma=busy_timeout(" + strconv.Itoa(int(sqliteBusyTimeout/time.Millisecond)) + ")&_pragma=journal_mode(WAL)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// Keep the connections that bursts of reads open (an INVITE reads its
	// number, a call its agent): database/sql keeps two by default and
	// closes the others after use, and opening one (its pragmas, its
	// statements prepared again) cost more than the reads. WAL readers do
	// not block each other; call records have one writer (records).
	db.SetMaxIdleConns(sqliteMaxIdleConns)
	s := newDB(db, dialectSQLite)
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
