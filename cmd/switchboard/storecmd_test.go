package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/auth"
	"switchboard/store"
	"switchboard/store/pgtest"
)

func TestStoreCopyIntoPostgres(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.OpenSQLite(ctx, dir)
	require.NoError(t, err)
	_, err = auth.NewKeyService(st).Bootstrap(ctx, dir, "default", "")
	require.NoError(t, err)
	require.NoError(t, st.Close())

	pg := pgtest.New(t)
	url, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	env := func(k string) string { return map[string]string{"SWITCHBOARD_DATA_DIR": dir}[k] }

	out, errOut, code := runIn(t, env, "store", "copy", "--to", url)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "api_keys 1")
	require.Contains(t, out, "audit_events 1")

	dst, err := store.OpenPostgres(ctx, url)
	require.NoError(t, err)
	defer dst.Close()
	k, err := dst.Keys().Get(ctx, auth.OwnerKeyID)
	require.NoError(t, err)
	require.True(t, k.Management)

	_, errOut, code = runIn(t, env, "store", "copy", "--to", url)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "not empty")
	_, errOut, code = runIn(t, env, "store", "copy")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "--to")
	_, errOut, code = runIn(t, env, "store", "copy", "--to", "mysql://x")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "postgres://")
}
