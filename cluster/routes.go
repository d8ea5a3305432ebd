package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// keyStatePath is the internal route where a node tells how it sees a key.
const keyStatePath = "/cluster/v1/keys/{key_id}"

// Routes are the routes between nodes (signed with the cluster secret) and
// GET /v1/cluster/nodes, the fleet as this node sees it (management key).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodGet, Pattern: keyStatePath, Access: httpx.Public, Handler: s.keyState},
		{Method: http.MethodGet, Pattern: "/v1/cluster/nodes", Access: httpx.Management, Handler: s.listNodes},
	}
}

// KeyState is how one node sees an API key.
type KeyState struct {
	NodeID     string `json:"node_id"`
	Found      bool   `json:"found"`
	Disabled   bool   `json:"disabled"`
	Hash       string `json:"hash"`
	ModifyTime int64  `json:"modify_time_us"`
}

func stateOf(node string, k *store.APIKey) KeyState {
	if k == nil {
		return KeyState{NodeID: node}
	}
	return KeyState{NodeID: node, Found: true, Disabled: k.Disabled, Hash: k.Hash, ModifyTime: k.ModifyTime.UnixMicro()}
}

func (s *Service) keyState(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.Verify(r); err != nil {
		return httpx.Unauthorized("this route is for the nodes of the fleet: " + err.Error())
	}
	k, err := s.opts.Store.Keys().Get(r.Context(), r.PathValue("key_id"))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, stateOf(s.opts.NodeID, k))
	return nil
}

// KeyPropagation asks every registered node how it sees key k and reports,
// per node id, whether that matches k (true for this node). A node that is
// not running, or does not answer within a second, is false.
func (s *Service) KeyPropagation(ctx context.Context, k *store.APIKey) (map[string]bool, error) {
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	want := stateOf("", k)
	out := make(map[string]bool, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.ID == s.opts.NodeID {
			out[n.ID] = true
			continue
		}
		if n.State == store.NodeStopped {
			continue
		}
		out[n.ID] = false
		if !n.Live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.askKey(ctx, n.Addr, k.ID)
			ok := err == nil && got.Found == want.Found && got.Disabled == want.Disabled && got.Hash == want.Hash &&
				got.ModifyTime == want.ModifyTime
			mu.Lock()
			out[n.ID] = ok
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, nil
}

func (s *Service) askKey(ctx context.Context, addr, keyID string) (KeyState, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	u := url.URL{Scheme: "http", Host: addr, Path: "/cluster/v1/keys/" + url.PathEscape(keyID)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return KeyState{}, err
	}
	s.sign(req)
	res, err := s.opts.Client.Do(req)
	if err != nil {
		return KeyState{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return KeyState{}, fmt.Errorf("node %s answered %s", addr, res.Status)
	}
	var st KeyState
	err = json.NewDecoder(http.MaxBytesReader(nil, res.Body, 1<<16)).Decode(&st)
	return st, err
}

type nodeJSON struct {
	ID          string `json:"node_id"`
	ClusterAddr string `json:"cluster_addr"`
	State       string `json:"state"`
	Live        bool   `json:"live"`
	This        bool   `json:"this_node"`
}

func (s *Service) listNodes(w http.ResponseWriter, r *http.Request) error {
	nodes, err := s.Nodes(r.Context())
	if err != nil {
		return err
	}
	out := make([]nodeJSON, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, nodeJSON{ID: n.ID, ClusterAddr: n.Addr, State: n.State, Live: n.Live, This: n.ID == s.opts.NodeID})
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"nodes": out})
	return nil
}
