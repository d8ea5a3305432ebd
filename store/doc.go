// Package store keeps the appliance's records (API keys, phone numbers,
// agents, audit events, calls) behind small per-aggregate interfaces.
//
// The embedded implementation is SQLite through modernc.org/sqlite (pure Go,
// no cgo) in the data directory, in WAL mode, with versioned migrations
// embedded in the binary. A PostgreSQL implementation can satisfy the same
// interfaces without touching callers.
package store
