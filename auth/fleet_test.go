package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// fakeFleet answers AskAll with what the other nodes would say.
type fakeFleet struct {
	answers map[string][]byte
	signed  bool
}

func (f *fakeFleet) NodeID() string { return "me" }
func (f *fakeFleet) AskAll(context.Context, string) (map[string][]byte, error) {
	return f.answers, nil
}
func (f *fakeFleet) Verify(*http.Request) (string, error) {
	if !f.signed {
		return "", errors.New("unsigned")
	}
	return "peer", nil
}

func TestPropagationComparesEveryNodesView(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	now := time.Unix(1_700_000_000, 0).UTC()
	k := &store.APIKey{ID: "k1", TeamID: "default", UserID: "u", Name: "k", Hash: "h1", Redacted: "r",
		ACLs: []string{"api-key:endpoint:*"}, CreateTime: now, ModifyTime: now}
	require.NoError(t, st.Keys().Create(ctx, k))
	fleet := &fakeFleet{}
	s := NewKeyService(st, WithFleet(fleet))

	same, _ := json.Marshal(stateOf(k))
	stale := *k
	stale.Disabled = true
	old, _ := json.Marshal(stateOf(&stale))
	fleet.answers = map[string][]byte{"b": same, "c": old, "d": nil, "e": []byte("garbage")}
	got, err := s.propagationOf(ctx, k)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"me": true, "b": true, "c": false, "d": false, "e": false}, got)

	// The key-state route answers only signed requests, with this node's view.
	rt := s.keyStateRoute()
	req := httptest.NewRequest(http.MethodGet, "/cluster/v1/keys/k1", nil)
	req.SetPathValue("apiKeyId", "k1")
	require.Error(t, rt.Handler(httptest.NewRecorder(), req), "an unsigned request is refused")
	fleet.signed = true
	w := httptest.NewRecorder()
	require.NoError(t, rt.Handler(w, req))
	var view keyState
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &view))
	require.Equal(t, stateOf(k), view)

	// A node that still holds the key in its cache reports that view.
	s.cache.put("h1", &stale, time.Now())
	v, err := s.view(ctx, "k1")
	require.NoError(t, err)
	require.True(t, v.Disabled)
	v, err = s.view(ctx, "nope")
	require.NoError(t, err)
	require.Nil(t, v)
}
