package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Fleet is the fleet of nodes this appliance belongs to (cluster.Service):
// the key service asks the other nodes how they see a key.
type Fleet interface {
	// NodeID is this node's id.
	NodeID() string
	// AskAll sends a signed GET of path to every other registered node
	// that has not stopped and returns the answers by node id; a node that
	// is lost or did not answer 200 has a nil body.
	AskAll(ctx context.Context, path string) (map[string][]byte, error)
	// Verify checks that r was signed by a node of the fleet.
	Verify(r *http.Request) (node string, err error)
}

// WithFleet makes the propagation check ask every node of the fleet.
func WithFleet(f Fleet) KeyOption { return func(s *KeyService) { s.fleet = f } }

// keyStatePath is the route where a node tells the others how it sees a key.
const keyStatePath = "/cluster/v1/keys/"

// keyState is how one node sees a key: what its requests are authorized
// with right now.
type keyState struct {
	Found      bool   `json:"found"`
	Disabled   bool   `json:"disabled"`
	Hash       string `json:"hash"`
	OldHash    string `json:"old_hash"`
	ExpireTime int64  `json:"expire_time_us"`
	ModifyTime int64  `json:"modify_time_us"`
}

func stateOf(k *store.APIKey) keyState {
	if k == nil {
		return keyState{}
	}
	return keyState{Found: true, Disabled: k.Disabled, Hash: k.Hash, OldHash: k.OldHash,
		ExpireTime: k.ExpireTime.UnixMicro(), ModifyTime: k.ModifyTime.UnixMicro()}
}

// view is the key record this node authorizes the key's secret with right
// now: the cached record while it is fresh (it may lag a change made on
// another node by up to keyCacheTTL), else the stored one; nil when the
// key is not stored.
func (s *KeyService) view(ctx context.Context, id string) (*store.APIKey, error) {
	k, err := s.st.Keys().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c, ok := s.cache.get(k.Hash, s.now()); ok && c.ID == id {
		return c, nil
	}
	return k, nil
}

// keyStateRoute is GET /cluster/v1/keys/{apiKeyId}: for the other nodes of
// the fleet only (signed with the cluster secret).
func (s *KeyService) keyStateRoute() httpx.Route {
	return httpx.Route{Method: http.MethodGet, Pattern: keyStatePath + "{apiKeyId}", Access: httpx.Public,
		Handler: func(w http.ResponseWriter, r *http.Request) error {
			if _, err := s.fleet.Verify(r); err != nil {
				return httpx.Unauthorized("this route is for the nodes of the fleet: " + err.Error())
			}
			k, err := s.view(r.Context(), r.PathValue("apiKeyId"))
			if err != nil {
				return err
			}
			httpx.WriteJSON(w, http.StatusOK, stateOf(k))
			return nil
		}}
}

// propagationOf reports, per node, whether the node authorizes the key as
// it is stored (k): this node from its own view, the others by asking them.
func (s *KeyService) propagationOf(ctx context.Context, k *store.APIKey) (map[string]bool, error) {
	want := stateOf(k)
	mine, err := s.view(ctx, k.ID)
	if err != nil {
		return nil, err
	}
	if s.fleet == nil {
		return map[string]bool{s.node: stateOf(mine) == want}, nil
	}
	answers, err := s.fleet.AskAll(ctx, keyStatePath+url.PathEscape(k.ID))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{s.fleet.NodeID(): stateOf(mine) == want}
	for node, body := range answers {
		var got keyState
		out[node] = body != nil && json.Unmarshal(body, &got) == nil && got == want
	}
	return out, nil
}
