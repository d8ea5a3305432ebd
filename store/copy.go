package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNotEmpty means a copy's destination already holds records.
var ErrNotEmpty = errors.New("destination is not empty")

// skipTables are not copied: the schema's own bookkeeping, and the node
// registry (nodes register themselves).
var skipTables = map[string]bool{"schema_migrations": true, "nodes": true}

// CopyFrom copies every record of the SQLite store src into s, which must
// be at the same schema version and hold no records: the way from one
// node on SQLite to a fleet on PostgreSQL. Tables are copied in the order
// the migrations created them (so a row's foreign keys exist before it),
// in one transaction, with the columns the two schemas share. It reports
// how many rows each table received.
func (s *DB) CopyFrom(ctx context.Context, src *DB) (map[string]int, error) {
	if src.dialect != dialectSQLite {
		return nil, errors.New("copy store: the source must be a SQLite store")
	}
	sv, err := src.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy store: %w", err)
	}
	dv, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy store: %w", err)
	}
	if sv != dv {
		return nil, fmt.Errorf("copy store: schema versions differ (source %d, destination %d): open both with this binary first", sv, dv)
	}
	tables, err := src.tables(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	err = s.Tx(ctx, func(tx Store) error {
		dst := tx.(*DB)
		for _, t := range tables {
			var n int
			if err := dst.q.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t).Scan(&n); err != nil {
				return fmt.Errorf("copy store: %s: %w", t, err)
			}
			if n > 0 {
				return fmt.Errorf("copy store: table %s has %d rows: %w", t, n, ErrNotEmpty)
			}
			if counts[t], err = copyTable(ctx, dst, src, t); err != nil {
				return err
			}
		}
		return nil
	})
	return counts, err
}

// tables lists the SQLite store's tables in creation order.
func (s *DB) tables(ctx context.Context) ([]string, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("copy store: list tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("copy store: list tables: %w", err)
		}
		if !skipTables[name] {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

// columns lists a table's columns as the database reports them.
func columns(ctx context.Context, q querier, table string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT * FROM `+table+` WHERE 1 = 0`)
	if err != nil {
		return nil, fmt.Errorf("copy store: %s: %w", table, err)
	}
	defer rows.Close()
	return rows.Columns()
}

func copyTable(ctx context.Context, dst, src *DB, table string) (int, error) {
	dcols, err := columns(ctx, dst.q, table)
	if err != nil {
		return 0, err
	}
	scols, err := columns(ctx, src.q, table)
	if err != nil {
		return 0, err
	}
	have := map[string]bool{}
	for _, c := range dcols {
		have[strings.ToLower(c)] = true
	}
	var cols []string
	for _, c := range scols {
		if have[strings.ToLower(c)] {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return 0, nil
	}
	list := strings.Join(cols, ", ")
	rows, err := src.q.QueryContext(ctx, `SELECT `+list+` FROM `+table)
	if err != nil {
		return 0, fmt.Errorf("copy store: read %s: %w", table, err)
	}
	defer rows.Close()
	insert := `INSERT INTO ` + table + ` (` + list + `) VALUES (?` + strings.Repeat(", ?", len(cols)-1) + `)`
	n := 0
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return n, fmt.Errorf("copy store: read %s: %w", table, err)
		}
		if _, err := dst.q.ExecContext(ctx, insert, vals...); err != nil {
			return n, fmt.Errorf("copy store: write %s: %w", table, err)
		}
		n++
	}
	return n, rows.Err()
}
