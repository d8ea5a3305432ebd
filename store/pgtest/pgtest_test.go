package pgtest

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestServerStartsCreatesAndStops(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", s.Host)
	url, err := s.CreateDatabase(ctx, "one")
	require.NoError(t, err)
	again, err := s.CreateDatabase(ctx, "one")
	require.NoError(t, err, "creating an existing database is a no-op")
	require.Equal(t, url, again)
	_, err = s.CreateDatabase(ctx, "bad; DROP")
	require.Error(t, err)

	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	var user string
	require.NoError(t, c.QueryRow(ctx, `SELECT current_user`).Scan(&user))
	require.Equal(t, Owner, user)
	require.NoError(t, c.Close(ctx))

	wrong := "postgres://" + Owner + ":nope@" + s.Host + ":" + strconv.Itoa(s.Port) + "/one?sslmode=disable"
	_, err = pgx.Connect(ctx, wrong)
	require.Error(t, err, "a wrong password is refused")

	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = pgx.Connect(ctx, url)
	require.Error(t, err, "the server is gone after Close")
}
