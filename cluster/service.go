package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/store"
)

// Store is what the cluster reads and writes: the node registry and the
// call records (to find a call's node).
type Store interface {
	Nodes() store.NodeStore
	Calls() store.CallStore
}

// LostHandler closes the open call records of a node found lost and says
// how many it closed (records.CloseLost).
type LostHandler func(ctx context.Context, node string) (int, error)

// Defaults of Options.
const (
	DefaultHeartbeat   = time.Second
	DefaultNodeTimeout = 5 * time.Second
	// MinSecretLen is the shortest cluster secret accepted.
	MinSecretLen = 16
)

// Options configure a Service.
type Options struct {
	NodeID string
	// Addr is the host:port of this node's HTTP API for the other nodes.
	Addr    string
	SIPAddr string
	// Secret is shared by every node of the fleet (at least MinSecretLen
	// bytes).
	Secret      []byte
	Heartbeat   time.Duration
	NodeTimeout time.Duration
	Store       Store
	OnLost      LostHandler
	Now         func() time.Time
	Log         zerolog.Logger
	// Client makes the requests to other nodes; default a client with no
	// overall timeout (forwarded WebSockets last as long as the call).
	Client *http.Client
}

// Service is this node's membership of the fleet.
type Service struct {
	opts    Options
	started time.Time

	mu    sync.Mutex
	state string
	beat  chan struct{}
}

// New returns the service; Register puts the node in the registry.
func New(opts Options) (*Service, error) {
	if opts.NodeID == "" || opts.Addr == "" || opts.Store == nil || opts.OnLost == nil {
		return nil, errors.New("cluster: node id, address, store and lost handler are required")
	}
	if len(opts.Secret) < MinSecretLen {
		return nil, fmt.Errorf("cluster: the cluster secret must be at least %d characters", MinSecretLen)
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = DefaultNodeTimeout
	}
	if opts.NodeTimeout < 2*opts.Heartbeat {
		return nil, errors.New("cluster: the node timeout must be at least two heartbeats")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	return &Service{opts: opts, started: opts.Now(), state: store.NodeActive, beat: make(chan struct{}, 1)}, nil
}

// NodeID is this node's id.
func (s *Service) NodeID() string { return s.opts.NodeID }

// Register puts this node in the registry as active.
func (s *Service) Register(ctx context.Context) error {
	now := s.opts.Now()
	return s.opts.Store.Nodes().Put(ctx, &store.Node{ID: s.opts.NodeID, ClusterAddr: s.opts.Addr, SIPAddr: s.opts.SIPAddr,
		State: s.State(), StartTime: s.started, Heartbeat: now})
}

// State is this node's current state.
func (s *Service) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// SetState changes this node's state and beats at once, so the fleet
// learns it within one round trip.
func (s *Service) SetState(state string) {
	s.mu.Lock()
	s.state = state
	s.mu.Unlock()
	select {
	case s.beat <- struct{}{}:
	default:
	}
}

// Stop records that this node stopped cleanly.
func (s *Service) Stop(ctx context.Context) error {
	s.SetState(store.NodeStopped)
	return s.heartbeat(ctx)
}

// Run beats and watches the other nodes until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.beat:
		}
		if err := s.heartbeat(ctx); err != nil && ctx.Err() == nil {
			s.opts.Log.Warn().Err(err).Msg("cluster heartbeat failed")
		}
		s.reap(ctx)
	}
}

// heartbeat writes this node's beat; a node the fleet declared lost (its
// beat did not reach the database in time) registers again.
func (s *Service) heartbeat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Heartbeat)
	defer cancel()
	err := s.opts.Store.Nodes().Beat(ctx, s.opts.NodeID, s.State(), s.opts.Now())
	if errors.Is(err, store.ErrNotFound) {
		s.opts.Log.Warn().Msg("cluster: this node was declared lost (its calls' records were closed by another node); registering again")
		return s.Register(ctx)
	}
	return err
}

// reap claims the nodes whose beat is older than the node timeout and
// closes their open call records.
func (s *Service) reap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.NodeTimeout)
	defer cancel()
	nodes, err := s.opts.Store.Nodes().List(ctx)
	if err != nil {
		s.opts.Log.Warn().Err(err).Msg("cluster: list nodes")
		return
	}
	cutoff := s.opts.Now().Add(-s.opts.NodeTimeout)
	for _, n := range nodes {
		if n.ID == s.opts.NodeID || !n.Heartbeat.Before(cutoff) || (n.State != store.NodeActive && n.State != store.NodeDraining) {
			continue
		}
		claimed, err := s.opts.Store.Nodes().ClaimLost(ctx, n.ID, cutoff)
		if err != nil || !claimed {
			continue
		}
		closed, err := s.opts.OnLost(ctx, n.ID)
		l := s.opts.Log.Warn().Str("lost_node", n.ID).Time("last_heartbeat", n.Heartbeat).Int("calls_closed", closed)
		if err != nil {
			l = l.Err(err)
		}
		l.Msg("cluster: a node stopped beating; its open calls are marked ended")
	}
}

// Peer is another node as this node sees it.
type Peer struct {
	ID    string
	Addr  string
	State string
	// Live is false when its last beat is older than the node timeout.
	Live bool
}

// Nodes lists every registered node (this one included) with its liveness.
func (s *Service) Nodes(ctx context.Context) ([]Peer, error) {
	nodes, err := s.opts.Store.Nodes().List(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := s.opts.Now().Add(-s.opts.NodeTimeout)
	out := make([]Peer, 0, len(nodes))
	for _, n := range nodes {
		live := (n.State == store.NodeActive || n.State == store.NodeDraining) && !n.Heartbeat.Before(cutoff)
		out = append(out, Peer{ID: n.ID, Addr: n.ClusterAddr, State: n.State, Live: live || n.ID == s.opts.NodeID})
	}
	return out, nil
}

// ErrNodeIDInUse means a running node already has the id this node was
// given.
var ErrNodeIDInUse = errors.New("cluster: node id in use")

// CheckIDFree refuses a node id that a running node of the fleet holds:
// registered active or draining, with a beat younger than timeout. Two
// processes sharing an id would close each other's call records. After a
// crash, the same node may start again once its last beat is timeout old.
func CheckIDFree(ctx context.Context, nodes store.NodeStore, id string, timeout time.Duration, now time.Time) error {
	n, err := nodes.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: check node id: %w", err)
	}
	if (n.State == store.NodeActive || n.State == store.NodeDraining) && now.Sub(n.Heartbeat) < timeout {
		return fmt.Errorf("%w: node %q (at %s) beat %v ago; give every node its own node id, or wait %v after a crash",
			ErrNodeIDInUse, id, n.ClusterAddr, now.Sub(n.Heartbeat).Round(time.Millisecond), timeout)
	}
	return nil
}
