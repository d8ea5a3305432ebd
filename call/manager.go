package call

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/rs/zerolog"
)

// Options configure a Manager.
type Options struct {
	// Inband says when the in-band DTMF detector runs (default auto: when
	// no telephone-event was negotiated).
	Inband Inband
	// Router picks each call's conversation.
	Router Router
	// Metrics receive call counters (may be nil).
	Metrics *Metrics
	// Journal, when set, is told of every call's changes (call records).
	Journal Journal
	// Health sets the media health thresholds.
	Health HealthOptions
	// Recorder, when set, records the calls that ask for it.
	Recorder Recorder
}

// Journal is told of the changes of a call that must survive a crash, as
// they happen: the call records keep each call from its admission. Admitted
// and Ended run on the call's goroutine and may take a store write's time
// (bounded by the journal); Changed runs on whichever goroutine changed the
// call and must not block.
type Journal interface {
	// Admitted: the call was admitted, before it rings and before it is
	// in the manager's registry.
	Admitted(c *Call)
	// Changed: the call was answered, or a transfer was noted.
	Changed(c *Call)
	// Ended: the call is over and out of the manager's registry.
	Ended(c *Call)
}

// Manager runs calls on any kind of leg (Run, Start) and keeps the
// registry of live calls.
type Manager struct {
	opts Options
	log  zerolog.Logger

	mu    sync.Mutex
	calls map[string]*Call
	wg    sync.WaitGroup
	// monitors ticks every call's health monitor.
	monitors *monitorClock
}

// NewManager returns a manager; opts.Router is required.
func NewManager(opts Options, log zerolog.Logger) (*Manager, error) {
	if opts.Router == nil {
		return nil, errors.New("call: manager needs a router")
	}
	if opts.Inband == "" {
		opts.Inband = InbandAuto
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	return &Manager{opts: opts, log: log, calls: map[string]*Call{}, monitors: newMonitorClock(opts.Health.withDefaults().Interval)}, nil
}

// Run runs one call on leg from admission to its end; ctx is the leg's
// lifetime.
func (m *Manager) Run(ctx context.Context, leg Leg, log zerolog.Logger) {
	c := m.admit(leg, log)
	defer m.finish(c)
	c.run(ctx)
}

// Start admits a call on leg (a call the appliance places) and runs it in
// the background: it returns once the call is in the registry and its
// record stored (Journal.Admitted), so its id answers the API at once.
// done, when set, runs after the call is over and out of the registry.
func (m *Manager) Start(ctx context.Context, leg Leg, log zerolog.Logger, done func()) *Call {
	c := m.admit(leg, log)
	go func() {
		defer func() {
			m.finish(c)
			if done != nil {
				done()
			}
		}()
		c.run(ctx)
	}()
	return c
}

// admit records a new call and puts it in the registry.
func (m *Manager) admit(leg Leg, log zerolog.Logger) *Call {
	c := newCall(m, leg, log)
	if m.opts.Journal != nil {
		m.opts.Journal.Admitted(c)
	}
	m.mu.Lock()
	m.calls[c.id] = c
	m.wg.Add(1)
	m.mu.Unlock()
	m.opts.Metrics.active.Inc()
	return c
}

// finish takes an ended call out of the registry and stores its record.
func (m *Manager) finish(c *Call) {
	m.opts.Metrics.active.Dec()
	m.mu.Lock()
	delete(m.calls, c.id)
	m.mu.Unlock()
	if m.opts.Journal != nil {
		m.opts.Journal.Ended(c)
	}
	m.wg.Done()
}

// Get returns a live call by id.
func (m *Manager) Get(id string) (*Call, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.calls[id]
	return c, ok
}

// List returns the live calls, oldest first.
func (m *Manager) List() []*Call {
	m.mu.Lock()
	out := make([]*Call, 0, len(m.calls))
	for _, c := range m.calls {
		out = append(out, c)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].started.Before(out[j].started) })
	return out
}

// Active is the number of live calls.
func (m *Manager) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

// Wait blocks until every call has finished.
func (m *Manager) Wait() { m.wg.Wait() }
