package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMigrationsAndRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	v, err := s.SchemaVersion(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, v, 1)

	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, s.Agents().Create(ctx, &Agent{ID: "ag_1", TeamID: "default", Name: "a", Doc: []byte(`{"x":1}`), CreateTime: now, UpdateTime: now}))
	require.NoError(t, s.Numbers().Create(ctx, &PhoneNumber{ID: "pn_1", TeamID: "default", PhoneNumber: "+14155550100", Name: "n",
		Origin: "byo_trunk", AgentID: "ag_1", AllowedAddresses: []string{"10.0.0.0/8"}, InboundTrunkID: "tr", CreateTime: now, UpdateTime: now}, nil))
	require.NoError(t, s.Close())

	s2 := openTest(t, dir)
	n, err := s2.Numbers().ByNumber(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, "ag_1", n.AgentID)
	require.Equal(t, []string{"10.0.0.0/8"}, n.AllowedAddresses)
	require.Equal(t, now, n.CreateTime)
	v2, err := s2.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, v, v2, "reopening applies nothing twice")
}

func TestSQLiteFile(t *testing.T) {
	onSQLite(t)
	dir := t.TempDir()
	s2 := openTest(t, dir)
	info, err := os.Stat(filepath.Join(dir, DBFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	var mode string
	require.NoError(t, s2.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
}

func TestConflictNotFoundAndTx(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	now := time.Now()
	pn := func(id string) *PhoneNumber {
		return &PhoneNumber{ID: id, TeamID: "default", PhoneNumber: "+14155550100", Name: "n", Origin: "byo_trunk", InboundTrunkID: "t", CreateTime: now, UpdateTime: now}
	}
	require.NoError(t, s.Numbers().Create(ctx, pn("pn_1"), nil))
	require.ErrorIs(t, s.Numbers().Create(ctx, pn("pn_2"), nil), ErrConflict)
	_, err := s.Numbers().Get(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, s.Numbers().Delete(ctx, "nope"), ErrNotFound)

	boom := errors.New("boom")
	err = s.Tx(ctx, func(tx Store) error {
		require.NoError(t, tx.Audit().Append(ctx, &AuditEvent{ID: "ev1", TeamID: "default", UserID: "u", Action: "x", Resource: "r", Description: "d", Time: now}))
		return boom
	})
	require.ErrorIs(t, err, boom)
	evs, _, err := s.Audit().List(ctx, "default", AuditQuery{})
	require.NoError(t, err)
	require.Empty(t, evs, "a failed transaction must leave nothing behind")
}

func TestPaginationAndFilters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	base := time.Unix(1_700_000_000, 0)
	for i := 0; i < 25; i++ {
		acls := []string{"api-key:endpoint:*"}
		if i%2 == 0 {
			acls = append(acls, "api-key:model:*")
		}
		require.NoError(t, s.Keys().Create(ctx, &APIKey{ID: fmt.Sprintf("k%02d", i), TeamID: "default", UserID: "u", Name: "k",
			Hash: fmt.Sprintf("h%d", i), Redacted: "r", ACLs: acls, Disabled: i == 3, CreateTime: base.Add(time.Duration(i) * time.Second), ModifyTime: base}))
		require.NoError(t, s.Audit().Append(ctx, &AuditEvent{ID: fmt.Sprintf("e%02d", i), TeamID: "default", UserID: "u", Action: "a",
			Resource: "r", Description: fmt.Sprintf("event number %d", i), Time: base.Add(time.Duration(i%5) * time.Second)}))
	}
	var all []string
	tok := ""
	for {
		keys, next, err := s.Keys().List(ctx, "default", KeyQuery{Page: Page{Size: 10, Token: tok}})
		require.NoError(t, err)
		for _, k := range keys {
			all = append(all, k.ID)
		}
		if next == "" {
			break
		}
		tok = next
	}
	require.Len(t, all, 25)
	require.Equal(t, "k00", all[0])
	require.Equal(t, "k24", all[24])

	keys, _, err := s.Keys().List(ctx, "default", KeyQuery{ActiveOnly: true, ACLFilters: []string{"api-key:model:*"}, Now: base})
	require.NoError(t, err)
	require.Len(t, keys, 13)

	_, _, err = s.Keys().List(ctx, "default", KeyQuery{Page: Page{Token: "garbage!"}})
	require.ErrorIs(t, err, ErrBadPageToken)

	var seen []string
	tok = ""
	for {
		evs, next, err := s.Audit().List(ctx, "default", AuditQuery{Descending: true, Page: Page{Size: 7, Token: tok}})
		require.NoError(t, err)
		for _, e := range evs {
			seen = append(seen, e.ID)
		}
		if next == "" {
			break
		}
		tok = next
	}
	require.Len(t, seen, 25)
	evs, _, err := s.Audit().List(ctx, "default", AuditQuery{Query: "number 1"})
	require.NoError(t, err)
	require.Len(t, evs, 11) // 1, 10..19
}

func TestRebind(t *testing.T) {
	tests := []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`a = ? AND b = ?`, `a = $1 AND b = $2`},
		{`a = ?1 OR b = ?1 AND c < ?2`, `a = $1 OR b = $1 AND c < $2`},
		{`x LIKE ? ESCAPE '\' AND y = '?' AND "q?" = ?`, `x LIKE $1 ESCAPE '\' AND y = '?' AND "q?" = $2`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, rebind(tt.in), tt.in)
	}
	args := []any{"a", true, false, 3}
	require.Equal(t, []any{"a", int64(1), int64(0), 3}, pgArgs(args))
	require.Equal(t, true, args[1], "the caller's arguments are left alone")
}

// TestConcurrentOpenMigratesOnce opens the same fresh database from several
// goroutines at once, as nodes of a fleet starting together do.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	open := opener(t, t.TempDir())
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			s, err := open()
			if err == nil {
				_, err = s.SchemaVersion(context.Background())
				s.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		require.NoError(t, <-errs)
	}
}
