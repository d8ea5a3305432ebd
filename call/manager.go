package call

import (
	"context"
	"errors"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/media"
	"switchboard/sip"
)

// Options configure a Manager.
type Options struct {
	// BindIP is the address RTP sockets are bound to, and the address of
	// the SDP answer unless the SIP server advertises a public one.
	BindIP netip.Addr
	// Ports is the RTP port pool.
	Ports *media.PortPool
	// JitterDelay is the jitter buffer's target delay (default 40 ms).
	JitterDelay time.Duration
	// MediaTimeout hangs up a call that received no RTP for this long
	// (0 disables it).
	MediaTimeout time.Duration
	// AnswerTimeout bounds Conversation.Prepare: the caller hears ringing
	// at most this long before the call is answered or refused (default 5 s).
	AnswerTimeout time.Duration
	// Rate is the conversations' audio rate (default 24000).
	Rate int
	// DTMFIdle flushes buffered digits after this long without a key
	// (default 2.5 s, the spec's rule).
	DTMFIdle time.Duration
	// Inband says when the in-band DTMF detector runs (default auto: when
	// no telephone-event was negotiated).
	Inband Inband
	// Router picks each call's conversation.
	Router Router
	// Metrics receive call counters (may be nil).
	Metrics *Metrics
	// OnEnd, when set, receives every finished call (call records).
	OnEnd func(*Call)
}

// Manager takes the calls the SIP server admits (it is a sip.Handler) and
// keeps the registry of live calls.
type Manager struct {
	opts Options
	log  zerolog.Logger

	mu    sync.Mutex
	calls map[string]*Call
	wg    sync.WaitGroup
}

var _ sip.Handler = (*Manager)(nil)

// NewManager returns a manager; opts.Ports and opts.Router are required.
func NewManager(opts Options, log zerolog.Logger) (*Manager, error) {
	if opts.Ports == nil || opts.Router == nil {
		return nil, errors.New("call: manager needs a port pool and a router")
	}
	if opts.JitterDelay == 0 {
		opts.JitterDelay = 40 * time.Millisecond
	}
	if opts.AnswerTimeout == 0 {
		opts.AnswerTimeout = 5 * time.Second
	}
	if opts.Rate == 0 {
		opts.Rate = 24000
	}
	if opts.DTMFIdle == 0 {
		opts.DTMFIdle = 2500 * time.Millisecond
	}
	if opts.Inband == "" {
		opts.Inband = InbandAuto
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	return &Manager{opts: opts, log: log, calls: map[string]*Call{}}, nil
}

// HandleCall runs one call from admission to its end (sip.Handler).
func (m *Manager) HandleCall(ctx context.Context, in *sip.InboundCall) {
	c := newCall(m, in)
	m.mu.Lock()
	m.calls[c.id] = c
	m.wg.Add(1)
	m.mu.Unlock()
	m.opts.Metrics.active.Inc()
	defer func() {
		m.opts.Metrics.active.Dec()
		m.mu.Lock()
		delete(m.calls, c.id)
		m.mu.Unlock()
		if m.opts.OnEnd != nil {
			m.opts.OnEnd(c)
		}
		m.wg.Done()
	}()
	c.run(ctx)
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
