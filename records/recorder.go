package records

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/store"
)

// Defaults of a Recorder.
const (
	// DefaultWriteTimeout bounds the transaction that writes a batch of
	// records, and how long a call waits for its record to be stored, so
	// that a slow store does not hold a call for long.
	DefaultWriteTimeout = 2 * time.Second
	// DefaultAliveInterval is how often the records of the calls in
	// progress are marked alive: a crash closes them at most this late
	// after their last sign of life, for one small UPDATE per interval.
	DefaultAliveInterval = 10 * time.Second
)

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// DefaultTeam owns calls whose number is unknown; default "default".
	DefaultTeam string
	// Timeout bounds the transaction of one batch of records, and a
	// call's wait for its record; default DefaultWriteTimeout.
	Timeout time.Duration
	// AliveInterval is how often Run marks the open records alive and
	// writes again the records whose write failed; default
	// DefaultAliveInterval.
	AliveInterval time.Duration
	// Now is the clock of the alive times; default time.Now.
	Now func() time.Time
	// Log receives the failures that belong to no call (the alive mark).
	Log zerolog.Logger
	// NodeID names this node in every record it writes (a fleet).
	NodeID string
	// Metrics count the writes (may be nil).
	Metrics *Metrics
	// BatchInterval is the least time between the starts of two
	// transactions of records (writer.go): a busy recorder commits the
	// changes of this long at once, an idle one writes a change at once.
	// 0: each transaction starts when the last one ends.
	BatchInterval time.Duration
}

// Recorder keeps the record of every call in the store from its admission
// to its end: it is the call manager's call.Journal. The record is written
// when the call is admitted (before it rings), again when it is answered
// and when a transfer is noted, and when it ends; Run marks the open
// records alive at a low rate. A crash therefore leaves every call it cut
// stored and open, and CloseCrashed ends them on the next start.
//
// One writer stores the records (writer.go): a call's change queues its
// call, and the writer writes every queued call in its latest state, all
// in one transaction, then the calls queued meanwhile in the next. Admitted
// and Ended wait (at most the Timeout) for the transaction that holds
// their call to commit; Changed does not wait. A failure is logged on the
// call's logger and written again by Run; the call is never held by its
// record for longer than the Timeout.
//
// It is also the LiveCalls of the calls API: a call is served live from
// its admission until its final record is stored.
type Recorder struct {
	st   store.Store
	opts RecorderOptions

	mu    sync.Mutex
	calls map[string]*entry
	// next is the batch the queued calls are written in; nil when none
	// is queued. writing says a writer is draining the batches; idle
	// is signalled when it stops.
	next    *batch
	writing bool
	idle    *sync.Cond
	// lastBatch is when the last batch started (the writer's alone).
	lastBatch time.Time
}

// entry is one call the recorder follows. Its flags are guarded by
// Recorder.mu.
type entry struct {
	c    *call.Call
	team string
	// stored: a record of the call is in the store. queued: the call is
	// in the next batch. retry: its last write failed, Run queues it
	// again. ended: the call is over (its next write is the final one).
	stored, queued, retry, ended bool
	// endTries counts failed writes of the final record.
	endTries int
}

// maxEndTries bounds the writes of a call's final record (one at its end,
// then one per Run round): past it the record stays as last written and
// the next start closes it if it is still open.
const maxEndTries = 10

var (
	_ LiveCalls    = (*Recorder)(nil)
	_ call.Journal = (*Recorder)(nil)
)

// NewRecorder returns a recorder writing to st.
func NewRecorder(st store.Store, opts RecorderOptions) *Recorder {
	if opts.DefaultTeam == "" {
		opts.DefaultTeam = DefaultTeam
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultWriteTimeout
	}
	if opts.AliveInterval <= 0 {
		opts.AliveInterval = DefaultAliveInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Recorder{st: st, opts: opts, calls: map[string]*entry{}}
	r.idle = sync.NewCond(&r.mu)
	return r
}

// Admitted stores the record of a call just admitted (call.Journal): it
// returns once the record is committed, or after the Timeout.
func (r *Recorder) Admitted(c *call.Call) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	e := &entry{c: c, team: r.teamOf(ctx, c)}
	r.mu.Lock()
	r.calls[c.ID()] = e
	b := r.queueLocked(e)
	r.mu.Unlock()
	r.wait(ctx, e, b)
}

// Changed queues the record of a call that changed (answer, transfer) for
// the writer, without waiting (call.Journal).
func (r *Recorder) Changed(c *call.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.calls[c.ID()]; e != nil && !e.ended {
		r.queueLocked(e)
	}
}

// Ended stores the final record of a call (call.Journal): it returns once
// the record is committed, or after the Timeout. Until it is stored, the
// call is still served from the recorder.
func (r *Recorder) Ended(c *call.Call) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	r.mu.Lock()
	e := r.calls[c.ID()]
	r.mu.Unlock()
	if e == nil { // not admitted through this recorder
		e = &entry{c: c, team: r.teamOf(ctx, c)}
	}
	r.mu.Lock()
	r.calls[c.ID()] = e
	e.ended = true
	b := r.queueLocked(e)
	r.mu.Unlock()
	r.wait(ctx, e, b)
}

// endWith drops an ended call once its final record is stored, or after
// maxEndTries; until then the call is still served from the recorder and
// Run writes it again. It runs with r.mu held.
func (r *Recorder) endWithLocked(stored bool, e *entry) {
	if !stored {
		e.endTries++
	}
	if stored || e.endTries >= maxEndTries {
		delete(r.calls, e.c.ID())
		if !stored {
			l := e.c.Logger()
			l.Error().Int("tries", e.endTries).Msg("call record: the final record was not stored; the next start closes the record if it is open")
		}
	}
}

// teamOf is the team of a call: its route's, else its number's, else the
// default team.
func (r *Recorder) teamOf(ctx context.Context, c *call.Call) string {
	if t := c.Route().TeamID; t != "" {
		return t
	}
	team, err := newTeams(r.st, r.opts.DefaultTeam).of(ctx, c.Route().NumberID)
	if err != nil {
		l := c.Logger()
		l.Warn().Err(err).Msg("call record: the number's team is unknown; the default team's")
		return r.opts.DefaultTeam
	}
	return team
}

// Run writes again the records whose write failed and marks the open ones
// alive, every AliveInterval, until ctx ends; then it writes what is still
// queued or failed and returns once the writer is idle.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.AliveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.retry() // a last try for the records still to write
			r.mu.Lock()
			for r.writing {
				r.idle.Wait()
			}
			r.mu.Unlock()
			return
		case <-t.C:
			r.retry()
			r.touch()
		}
	}
}

// retry queues again the records whose last write failed: the changes of
// open calls, and the final records of ended calls.
func (r *Recorder) retry() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.calls {
		if e.retry {
			r.queueLocked(e)
		}
	}
}

// touch marks the stored open records alive, in one statement.
func (r *Recorder) touch() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.calls))
	for id, e := range r.calls {
		if e.stored && !e.ended {
			ids = append(ids, id)
		}
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	if err := r.st.Calls().Touch(ctx, ids, r.opts.Now()); err != nil {
		r.opts.Log.Warn().Err(err).Int("calls", len(ids)).Msg("call records not marked alive")
	}
}

// Save stores the record of the finished call s, in the team of its
// number (ErrConflict when it is stored already). It is for records made
// outside a call's life (imports, tests).
func (r *Recorder) Save(ctx context.Context, s call.Snapshot) error {
	team, err := newTeams(r.st, r.opts.DefaultTeam).of(ctx, s.NumberID)
	if err != nil {
		return fmt.Errorf("store call record: %w", err)
	}
	sc, err := toStore(s, team)
	if err != nil {
		return fmt.Errorf("store call record: %w", err)
	}
	sc.AliveTime = s.Ended
	if err := r.st.Calls().Create(ctx, sc); err != nil {
		return fmt.Errorf("store call record: %w", err)
	}
	return nil
}

// Unstored returns the live calls whose record is not stored yet (its
// first write failed).
func (r *Recorder) Unstored() []call.Snapshot { return r.snapshots(false) }

// All returns every live call the recorder follows.
func (r *Recorder) All() []call.Snapshot { return r.snapshots(true) }

// snapshots views the live calls: all, or the unstored ones.
func (r *Recorder) snapshots(all bool) []call.Snapshot {
	r.mu.Lock()
	var cs []*call.Call
	for _, e := range r.calls {
		if all || !e.stored {
			cs = append(cs, e.c)
		}
	}
	r.mu.Unlock()
	out := make([]call.Snapshot, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Snapshot())
	}
	return out
}

// LiveSnapshot returns the current view of a call the recorder follows.
func (r *Recorder) LiveSnapshot(id string) (call.Snapshot, bool) {
	r.mu.Lock()
	e := r.calls[id]
	r.mu.Unlock()
	if e == nil {
		return call.Snapshot{}, false
	}
	return e.c.Snapshot(), true
}

// EndedByCrash is the ended_by of a record that a crash left open.
const EndedByCrash = "crash"

// crashReason is the end_reason of a record closed by CloseCrashed.
const crashReason = "the appliance stopped without ending the call; ended at the last time it was known to be up"

// CloseCrashed ends the call records that a crash of node left open (and
// those of records made before fleets, which name no node), each at the
// last time its call was known to be up (its last write or alive mark),
// as ended_by "crash", and says how many it closed. Run it on start,
// before taking calls: every open record of the node then belongs to a
// call the previous process lost. It is the one home of this rule.
func CloseCrashed(ctx context.Context, calls store.CallStore, node string) (int, error) {
	n, err := calls.CloseOpen(ctx, store.CloseOpen{Nodes: []string{node, ""}, State: string(call.StateEnded),
		EndedBy: EndedByCrash, Reason: crashReason})
	if err != nil {
		return 0, fmt.Errorf("close records left open: %w", err)
	}
	return n, nil
}

// EndedByNodeLost is the ended_by of a record closed because its node
// stopped beating (killed, or cut off from the database).
const EndedByNodeLost = "node_lost"

// lostReason is the end_reason of a record closed by CloseLost.
const lostReason = "the node holding the call stopped; ended at the last time it was known to be up"

// CloseLost ends the open call records of a node that another node found
// lost, each at its last known time, as ended_by "node_lost".
func CloseLost(ctx context.Context, calls store.CallStore, node string) (int, error) {
	n, err := calls.CloseOpen(ctx, store.CloseOpen{Nodes: []string{node}, State: string(call.StateEnded),
		EndedBy: EndedByNodeLost, Reason: lostReason})
	if err != nil {
		return 0, fmt.Errorf("close the records of lost node %s: %w", node, err)
	}
	return n, nil
}
