package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClientSecrets(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	now := time.Now().UTC().Truncate(time.Microsecond)
	cs := &ClientSecret{ID: "cs_1", TeamID: "default", KeyID: "key_owner", Hash: "h1", Session: []byte(`{"model":"m"}`),
		ExpireTime: now.Add(time.Minute), CreateTime: now}
	require.NoError(t, s.ClientSecrets().Create(ctx, cs))
	require.ErrorIs(t, s.ClientSecrets().Create(ctx, &ClientSecret{ID: "cs_2", Hash: "h1", ExpireTime: now, CreateTime: now}), ErrConflict)
	require.NoError(t, s.ClientSecrets().Create(ctx, &ClientSecret{ID: "cs_3", TeamID: "default", KeyID: "k", Hash: "h3",
		ExpireTime: now.Add(-time.Minute), CreateTime: now}))

	got, err := s.ClientSecrets().ByHash(ctx, "h1")
	require.NoError(t, err)
	require.Equal(t, cs, got)
	got, err = s.ClientSecrets().ByHash(ctx, "h3")
	require.NoError(t, err)
	require.Nil(t, got.Session)
	_, err = s.ClientSecrets().ByHash(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)

	n, err := s.ClientSecrets().DeleteExpired(ctx, now)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = s.ClientSecrets().ByHash(ctx, "h3")
	require.ErrorIs(t, err, ErrNotFound)
}
