// Package store keeps the appliance's records (API keys, phone numbers,
// agents, audit events, calls) behind small per-aggregate interfaces.
//
// DB is the one implementation, over database/sql, on two databases: SQLite
// through modernc.org/sqlite (pure Go, no cgo) in the data directory, in WAL
// mode, the embedded default; or PostgreSQL through pgx's database/sql
// adapter, which a fleet of nodes shares (Open picks by the database URL).
// Queries are written once with ? placeholders in SQL both accept, and the
// versioned migrations embedded in the binary run on both: see the rules at
// the top of migrations/0001_init.sql. The test suite runs on both.
package store
