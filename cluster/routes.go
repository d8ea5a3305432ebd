package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// askTimeout bounds one question to another node (AskAll): a node that
// takes longer counts as not answering.
const askTimeout = time.Second

// maxAnswer bounds the body of an answer to AskAll.
const maxAnswer = 1 << 16

// Routes is GET /v1/cluster/nodes, the fleet as this node sees it
// (management key).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodGet, Pattern: "/v1/cluster/nodes", Access: httpx.Management, Handler: s.listNodes},
	}
}

// AskAll sends a signed GET of path to every other registered node that has
// not stopped, in parallel, and returns the answers by node id: nil for a
// node that is lost, did not answer within a second, or answered other
// than 200.
func (s *Service) AskAll(ctx context.Context, path string) (map[string][]byte, error) {
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.ID == s.opts.NodeID || n.State == store.NodeStopped {
			continue
		}
		out[n.ID] = nil
		if !n.Live {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := s.ask(ctx, n.Addr, path)
			if err != nil {
				s.opts.Log.Debug().Err(err).Str("peer_node", n.ID).Str("path", path).Msg("cluster: a node did not answer")
				return
			}
			mu.Lock()
			out[n.ID] = body
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, nil
}

func (s *Service) ask(ctx context.Context, addr, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	base, err := baseURL(addr)
	if err != nil {
		return nil, err
	}
	u, err := base.Parse(path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	s.sign(req)
	res, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %s answered %s", addr, res.Status)
	}
	return io.ReadAll(io.LimitReader(res.Body, maxAnswer))
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
