package store

import (
	"context"
	"time"
)

// Node states.
const (
	NodeActive   = "active"   // takes calls
	NodeDraining = "draining" // finishing its calls, refusing new ones
	NodeStopped  = "stopped"  // stopped cleanly
	NodeLost     = "lost"     // stopped beating; its calls were closed by another node
)

// Node is one appliance of a fleet sharing the store.
type Node struct {
	ID string
	// ClusterAddr is the host:port of its HTTP API for the other nodes.
	ClusterAddr string
	SIPAddr     string
	State       string
	StartTime   time.Time
	Heartbeat   time.Time
}

// NodeStore is the registry of nodes.
type NodeStore interface {
	// Put registers n, replacing an earlier registration of its id.
	Put(ctx context.Context, n *Node) error
	// Beat sets a node's state and heartbeat (ErrNotFound when it is not
	// registered, or was declared lost: it must register again).
	Beat(ctx context.Context, id, state string, at time.Time) error
	Get(ctx context.Context, id string) (*Node, error)
	// List returns every registered node, by id.
	List(ctx context.Context) ([]*Node, error)
	// ClaimLost marks the node lost when it is active or draining and its
	// last beat is before cutoff; it reports whether this call did, so
	// that one node alone closes a lost node's calls.
	ClaimLost(ctx context.Context, id string, cutoff time.Time) (bool, error)
}

type sqlNodes struct{ q querier }

// Nodes returns the node registry.
func (s *DB) Nodes() NodeStore { return sqlNodes{s.q} }

const nodeCols = `id, cluster_addr, sip_addr, state, started_us, heartbeat_us`

func scanNode(row scanner) (*Node, error) {
	var (
		n        Node
		sUS, hUS int64
	)
	if err := row.Scan(&n.ID, &n.ClusterAddr, &n.SIPAddr, &n.State, &sUS, &hUS); err != nil {
		return nil, err
	}
	n.StartTime, n.Heartbeat = fromUS(sUS), fromUS(hUS)
	return &n, nil
}

func (s sqlNodes) Put(ctx context.Context, n *Node) error {
	_, err := s.q.ExecContext(ctx, `INSERT INTO nodes(`+nodeCols+`) VALUES (?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET cluster_addr = excluded.cluster_addr, sip_addr = excluded.sip_addr,
		state = excluded.state, started_us = excluded.started_us, heartbeat_us = excluded.heartbeat_us`,
		n.ID, n.ClusterAddr, n.SIPAddr, n.State, toUS(n.StartTime), toUS(n.Heartbeat))
	return mapErr("register node", err)
}

func (s sqlNodes) Beat(ctx context.Context, id, state string, at time.Time) error {
	res, err := s.q.ExecContext(ctx, `UPDATE nodes SET state = ?, heartbeat_us = ? WHERE id = ? AND state <> ?`,
		state, toUS(at), id, NodeLost)
	return affected("node heartbeat", res, err)
}

func (s sqlNodes) Get(ctx context.Context, id string) (*Node, error) {
	n, err := scanNode(s.q.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM nodes WHERE id = ?`, id))
	return n, mapErr("get node", err)
}

func (s sqlNodes) List(ctx context.Context) ([]*Node, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+nodeCols+` FROM nodes ORDER BY id`)
	if err != nil {
		return nil, mapErr("list nodes", err)
	}
	defer rows.Close()
	var out []*Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, mapErr("list nodes", err)
		}
		out = append(out, n)
	}
	return out, mapErr("list nodes", rows.Err())
}

func (s sqlNodes) ClaimLost(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	res, err := s.q.ExecContext(ctx, `UPDATE nodes SET state = ? WHERE id = ? AND heartbeat_us < ? AND state IN (?, ?)`,
		NodeLost, id, toUS(cutoff), NodeActive, NodeDraining)
	if err != nil {
		return false, mapErr("claim lost node", err)
	}
	n, err := res.RowsAffected()
	return n == 1, mapErr("claim lost node", err)
}
