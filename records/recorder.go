package records

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/call"
	"switchboard/store"
)

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// DefaultTeam owns calls whose number is unknown; default "default".
	DefaultTeam string
	// Timeout bounds the write of one record, so that a slow store does not
	// hold a call's teardown for long; default 2 s.
	Timeout time.Duration
}

// Recorder persists the record of every finished call.
// While it writes a record, the call is still served from it (it is a
// LiveCalls), so a call that just left the call manager is not missing
// from the API until its record is stored.
type Recorder struct {
	st   store.Store
	opts RecorderOptions

	mu      sync.Mutex
	writing map[string]call.Snapshot
}

var _ LiveCalls = (*Recorder)(nil)

// NewRecorder returns a recorder writing to st.
func NewRecorder(st store.Store, opts RecorderOptions) *Recorder {
	if opts.DefaultTeam == "" {
		opts.DefaultTeam = DefaultTeam
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	return &Recorder{st: st, opts: opts, writing: map[string]call.Snapshot{}}
}

// OnEnd stores the record of a finished call (use it as
// call.Options.OnEnd). It runs on the call's goroutine, bounded by the
// Timeout; a failure is logged on the call's logger, the call is not
// held.
func (r *Recorder) OnEnd(c *call.Call) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	start := time.Now()
	snap := c.Snapshot()
	r.mu.Lock()
	r.writing[snap.ID] = snap
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.writing, snap.ID)
		r.mu.Unlock()
	}()
	if err := r.Save(ctx, snap); err != nil {
		l := c.Logger()
		l.Error().Err(err).Dur("elapsed", time.Since(start)).Msg("call record not stored")
	}
}

// Save stores the record of the call s, in the team of its number.
func (r *Recorder) Save(ctx context.Context, s call.Snapshot) error {
	team, err := newTeams(r.st, r.opts.DefaultTeam).of(ctx, s.NumberID)
	if err != nil {
		return fmt.Errorf("store call record: %w", err)
	}
	sc, err := toStore(s, team)
	if err != nil {
		return fmt.Errorf("store call record: %w", err)
	}
	if err := r.st.Calls().Create(ctx, sc); err != nil {
		return fmt.Errorf("store call record: %w", err)
	}
	return nil
}

// LiveSnapshots returns the calls whose record is being written.
func (r *Recorder) LiveSnapshots() []call.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]call.Snapshot, 0, len(r.writing))
	for _, s := range r.writing {
		out = append(out, s)
	}
	return out
}

// LiveSnapshot returns a call whose record is being written.
func (r *Recorder) LiveSnapshot(id string) (call.Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.writing[id]
	return s, ok
}
