package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func newTestService(t *testing.T, st Store, id string, now func() time.Time, lost LostHandler) *Service {
	t.Helper()
	s, err := New(Options{NodeID: id, Addr: "127.0.0.1:1", Secret: []byte("0123456789abcdef0123"), Store: st,
		OnLost: lost, Now: now, Heartbeat: time.Second, NodeTimeout: 3 * time.Second})
	require.NoError(t, err)
	return s
}

func TestSignatureBindsNodeTimeMethodAndURI(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	a := newTestService(t, nil2(), "a", clock, noLost)
	r := httptest.NewRequest(http.MethodGet, "/cluster/v1/keys/k1?x=1", nil)
	a.sign(r)
	node, err := a.Verify(r)
	require.NoError(t, err)
	require.Equal(t, "a", node)

	other := httptest.NewRequest(http.MethodPost, "/cluster/v1/keys/k1?x=1", nil)
	other.Header.Set(Header, r.Header.Get(Header))
	_, err = a.Verify(other)
	require.ErrorIs(t, err, ErrBadSignature, "another method")

	wrongSecret, err := New(Options{NodeID: "a", Addr: "x:1", Secret: []byte("another secret, long enough"), Store: nil2(), OnLost: noLost, Now: clock})
	require.NoError(t, err)
	_, err = wrongSecret.Verify(r)
	require.ErrorIs(t, err, ErrBadSignature, "another secret")

	now = now.Add(time.Minute)
	_, err = a.Verify(r)
	require.ErrorIs(t, err, ErrBadSignature, "too old")

	_, err = a.Verify(httptest.NewRequest(http.MethodGet, "/", nil))
	require.ErrorIs(t, err, ErrUnsigned)
	for _, h := range []string{"a", "a:b:c", "a:1:"} {
		bad := httptest.NewRequest(http.MethodGet, "/", nil)
		bad.Header.Set(Header, h)
		_, err = a.Verify(bad)
		require.ErrorIs(t, err, ErrBadSignature, h)
	}
}

func TestNewRefusesAShortSecretAndATimeoutBelowTwoBeats(t *testing.T) {
	_, err := New(Options{NodeID: "a", Addr: "x:1", Secret: []byte("short"), Store: nil2(), OnLost: noLost})
	require.Error(t, err)
	_, err = New(Options{NodeID: "a", Addr: "x:1", Secret: []byte("0123456789abcdef"), Store: nil2(), OnLost: noLost,
		Heartbeat: time.Second, NodeTimeout: time.Second})
	require.Error(t, err)
}

func TestReapClaimsALostNodeOnce(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	var lost []string
	onLost := func(_ context.Context, node string) (int, error) { lost = append(lost, node); return 0, nil }
	a := newTestService(t, st, "a", clock, onLost)
	b := newTestService(t, st, "b", clock, onLost)
	require.NoError(t, a.Register(ctx))
	require.NoError(t, b.Register(ctx))

	now = now.Add(2 * time.Second)
	require.NoError(t, a.heartbeat(ctx))
	a.reap(ctx)
	require.Empty(t, lost, "b is within its timeout")

	b.SetState(store.NodeDraining)
	now = now.Add(2 * time.Second) // b last beat 4 s ago
	require.NoError(t, a.heartbeat(ctx))
	a.reap(ctx)
	a.reap(ctx)
	require.Equal(t, []string{"b"}, lost)
	peers, err := a.Nodes(ctx)
	require.NoError(t, err)
	require.Len(t, peers, 2)
	require.Equal(t, store.NodeLost, peers[1].State)
	require.False(t, peers[1].Live)

	// b comes back: its beat finds it lost, and it registers again.
	require.NoError(t, b.heartbeat(ctx))
	peers, err = a.Nodes(ctx)
	require.NoError(t, err)
	require.True(t, peers[1].Live)
	require.Equal(t, store.NodeDraining, peers[1].State)

	require.NoError(t, b.Stop(ctx))
	now = now.Add(time.Minute)
	require.NoError(t, a.heartbeat(ctx))
	a.reap(ctx)
	require.Equal(t, []string{"b"}, lost, "a node that stopped cleanly is not lost")
}

func noLost(context.Context, string) (int, error) { return 0, nil }

// nil2 is a Store that is never called (signature tests).
func nil2() Store { return (*store.DB)(nil) }

func TestCheckIDFree(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	now := time.Unix(1_700_000_000, 0)
	require.NoError(t, CheckIDFree(ctx, st.Nodes(), "a", 5*time.Second, now), "a new id is free")
	require.NoError(t, st.Nodes().Put(ctx, &store.Node{ID: "a", ClusterAddr: "x:1", State: store.NodeActive, StartTime: now, Heartbeat: now}))
	require.ErrorIs(t, CheckIDFree(ctx, st.Nodes(), "a", 5*time.Second, now.Add(time.Second)), ErrNodeIDInUse)
	require.NoError(t, CheckIDFree(ctx, st.Nodes(), "a", 5*time.Second, now.Add(6*time.Second)), "a crashed node may come back")
	require.NoError(t, st.Nodes().Beat(ctx, "a", store.NodeStopped, now))
	require.NoError(t, CheckIDFree(ctx, st.Nodes(), "a", 5*time.Second, now), "a stopped node may start again")
}

func TestBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:8080": "http://10.0.0.1:8080", "https://sb1.example:8443": "https://sb1.example:8443",
		"http://[::1]:80": "http://[::1]:80",
	} {
		u, err := baseURL(in)
		require.NoError(t, err, in)
		require.Equal(t, want, u.String())
	}
	for _, bad := range []string{"ftp://x:1", "https://", "::"} {
		_, err := baseURL(bad)
		require.Error(t, err, bad)
	}
}
