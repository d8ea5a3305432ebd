package app

import (
	"context"
	"fmt"
	"os"

	"switchboard/cluster"
	"switchboard/config"
	"switchboard/records"
	"switchboard/store"
)

// nodeID is this node's id: the configured one, else the host name.
func nodeID(cfg *config.Config) (string, error) {
	if cfg.Cluster.NodeID != "" {
		return cfg.Cluster.NodeID, nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("node id: no cluster.node_id set and no host name: %v", err)
	}
	return h, nil
}

// buildCluster joins the fleet when the store is shared (PostgreSQL); on
// SQLite the appliance is alone and a.cluster stays nil.
func (a *App) buildCluster(cfg *config.Config) error {
	if !cfg.Fleet() {
		return nil
	}
	addr := cfg.Cluster.Addr
	if addr == "" {
		addr = a.httpLn.Addr().String()
	}
	if cfg.HTTP.TLSCert != "" {
		// The other nodes reach this one over HTTPS, checking its
		// certificate: cluster.addr must then be a name it covers.
		addr = "https://" + addr
	}
	calls := a.st.Calls()
	var err error
	a.cluster, err = cluster.New(cluster.Options{
		NodeID: a.nodeID, Addr: addr, Secret: []byte(cfg.Cluster.Secret),
		Heartbeat: cfg.Cluster.Heartbeat, NodeTimeout: cfg.Cluster.NodeTimeout, Store: a.st,
		OnLost: func(ctx context.Context, node string) (int, error) { return records.CloseLost(ctx, calls, node) },
		Log:    a.log.With().Str("component", "cluster").Str("node_id", a.nodeID).Logger(),
	})
	return err
}

// runCluster registers the node and beats until stop is called; the node
// is then recorded as stopped. Without a fleet it does nothing.
func (a *App) runCluster(ctx context.Context) (stop func(), err error) {
	if a.cluster == nil {
		return func() {}, nil
	}
	if err := a.cluster.Register(ctx); err != nil {
		return nil, fmt.Errorf("cluster: register node %s: %w", a.nodeID, err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.cluster.Run(cctx) }()
	return func() {
		cancel()
		<-done
		sctx, scancel := context.WithTimeout(context.Background(), a.cfg.Cluster.Heartbeat*2)
		defer scancel()
		if err := a.cluster.Stop(sctx); err != nil {
			a.log.Warn().Err(err).Msg("cluster: could not record this node as stopped")
		}
	}, nil
}

// drainCluster tells the fleet this node takes no new calls.
func (a *App) drainCluster() {
	if a.cluster != nil {
		a.cluster.SetState(store.NodeDraining)
	}
}
