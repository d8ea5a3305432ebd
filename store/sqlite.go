package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// DBFile is the database's file name inside the data directory.
const DBFile = "switchboard.db"

// OpenSQLite opens (creating when needed) the database in dataDir, switches
// it to WAL mode and applies every embedded migration not applied yet.
func OpenSQLite(ctx context.Context, dataDir string) (*DB, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	path := filepath.Join(dataDir, DBFile)
	// busy_timeout first: switching a new database to WAL takes a lock
	// that another process opening it at the same moment may hold.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
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
