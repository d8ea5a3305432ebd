package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/numbers"
	"switchboard/sip"
	"switchboard/store"
	"switchboard/webhook"
)

// Numbers is where the registrations to keep come from, and the webhooks
// of their numbers (numbers.Service).
type Numbers interface {
	Bindings(ctx context.Context) ([]*numbers.Binding, error)
	Webhook(ctx context.Context, numberID string) (*numbers.WebhookDetails, error)
}

// Line is one registration at its registrar (a *sip.Registration).
type Line interface {
	Register(ctx context.Context) (sip.Registered, error)
	Unregister(ctx context.Context) error
	KeepAlive(ctx context.Context) error
	Close()
}

// Registrar makes lines (the SIP server).
type Registrar interface {
	NewLine(b sip.Binding) (Line, error)
}

// Store is the fleet's record of the bindings (store.RegistrationStore).
type Store interface {
	Bindings(ctx context.Context) ([]*store.RegistrationBinding, error)
	Claim(ctx context.Context, key, node string, until, now time.Time) (bool, error)
	Release(ctx context.Context, key, node string) error
	SetState(ctx context.Context, b *store.RegistrationBinding) error
	DeleteBinding(ctx context.Context, key string) error
}

// Webhooks delivers lifecycle events (webhook.Dispatcher).
type Webhooks interface {
	DeliverAsync(t webhook.Target, ev webhook.Event, done func(webhook.Result, error)) error
}

// Defaults of Options.
const (
	DefaultSyncInterval  = 5 * time.Second
	DefaultLeaseTTL      = 20 * time.Second
	DefaultRetryMin      = 5 * time.Second
	DefaultRetryMax      = 5 * time.Minute
	DefaultRefreshBefore = 30 * time.Second
	DefaultKeepAlive     = 25 * time.Second
	DefaultTimeout       = 32 * time.Second // 64×T1: a non-INVITE transaction's own limit
)

// Options configure a Manager; NodeID, Numbers, Registrar and Store are
// required.
type Options struct {
	// NodeID names this node in the bindings' leases.
	NodeID    string
	Numbers   Numbers
	Registrar Registrar
	Store     Store
	// Webhooks, when set, delivers phone_number.registration events.
	Webhooks Webhooks
	Metrics  *Metrics
	Log      zerolog.Logger
	// SyncInterval is how often the registrations are read and the leases
	// renewed; LeaseTTL how long a lease lasts unrenewed (another node
	// takes the binding over after it), at least two syncs.
	SyncInterval time.Duration
	LeaseTTL     time.Duration
	// RetryMin is the wait after a first failure, doubled after each
	// further one up to RetryMax.
	RetryMin, RetryMax time.Duration
	// RefreshBefore is how long before the registrar's expiry a binding
	// is refreshed (at the latest half way through).
	RefreshBefore time.Duration
	// KeepAlive is how often the path to the registrar is pinged between
	// refreshes (0: never).
	KeepAlive time.Duration
	// Timeout bounds one REGISTER exchange, and the unregisters at stop.
	Timeout time.Duration
	// Changes wakes the manager when numbers changed on this node.
	Changes <-chan struct{}
}

// Manager keeps the registrations of the numbers (see the package doc).
type Manager struct {
	opts Options

	mu    sync.Mutex
	lines map[string]*line
	wg    sync.WaitGroup
	// complaints holds the last error logged per subject (the sync, a
	// binding that cannot start): an error is logged when it changes, not
	// at every sync.
	complaints map[string]string
}

// New returns a manager; Run keeps the registrations.
func New(opts Options) (*Manager, error) {
	if opts.NodeID == "" || opts.Numbers == nil || opts.Registrar == nil || opts.Store == nil {
		return nil, errors.New("registration: node id, numbers, registrar and store are required")
	}
	def := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&opts.SyncInterval, DefaultSyncInterval)
	def(&opts.LeaseTTL, DefaultLeaseTTL)
	def(&opts.RetryMin, DefaultRetryMin)
	def(&opts.RetryMax, DefaultRetryMax)
	def(&opts.RefreshBefore, DefaultRefreshBefore)
	def(&opts.Timeout, DefaultTimeout)
	if opts.KeepAlive < 0 {
		opts.KeepAlive = 0
	}
	if opts.LeaseTTL < 2*opts.SyncInterval {
		return nil, fmt.Errorf("registration: the lease (%v) must last at least two syncs (%v)", opts.LeaseTTL, opts.SyncInterval)
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = opts.RetryMin
	}
	return &Manager{opts: opts, lines: map[string]*line{}, complaints: map[string]string{}}, nil
}

// Run keeps the registrations until ctx ends, then unregisters every
// binding it holds (each within Options.Timeout), writes them off and
// gives their leases up, and returns once that is done.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.SyncInterval)
	defer t.Stop()
	for {
		m.sync(ctx)
		select {
		case <-ctx.Done():
			m.stopAll()
			return
		case <-t.C:
		case <-m.opts.Changes:
		}
	}
}

// stopAll stops every line, unregistering, and waits for them.
func (m *Manager) stopAll() {
	m.mu.Lock()
	for key, l := range m.lines {
		l.stop(stopUnregister)
		delete(m.lines, key)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// sync compares the registrations to keep with the lines held: it claims
// (or renews) each binding's lease, starts a line for a binding it got,
// restarts one whose settings changed, and stops the lines of bindings
// that are no longer wanted or that another node took.
func (m *Manager) sync(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.SyncInterval)
	defer cancel()
	want, err := m.opts.Numbers.Bindings(ctx)
	if m.complain("sync", err) {
		m.opts.Log.Warn().Err(err).Msg("registration: cannot read the numbers' registrations; keeping the current ones")
	}
	if err != nil {
		return
	}
	wanted := map[string]bool{}
	now := time.Now()
	for _, b := range want {
		wanted[b.Key] = true
		held, err := m.opts.Store.Claim(ctx, b.Key, m.opts.NodeID, now.Add(m.opts.LeaseTTL), now)
		if m.complain("lease "+b.Key, err) {
			m.opts.Log.Warn().Err(err).Str("binding", b.Key).Msg("registration: cannot renew the lease; trying again at each sync")
		}
		if err != nil {
			continue
		}
		m.mu.Lock()
		l := m.lines[b.Key]
		m.mu.Unlock()
		switch {
		case !held && l != nil:
			m.opts.Log.Info().Str("binding", b.Key).Msg("registration: another node holds this registration now; unregistering here")
			m.drop(b.Key, stopUnregister)
		case !held:
		case l == nil:
			m.start(b)
		case !sameBinding(l.b, b):
			// Same account and contact, other settings (password, interval,
			// numbers): the new line registers the same contact again.
			m.drop(b.Key, stopRestart)
			l.wait()
			m.start(b)
		}
	}
	m.mu.Lock()
	var gone []string
	for key := range m.lines {
		if !wanted[key] {
			gone = append(gone, key)
		}
	}
	m.mu.Unlock()
	for _, key := range gone {
		m.drop(key, stopRemoved)
	}
	m.collect(ctx, wanted, now)
}

// collect forgets the records of bindings nobody wants and nobody holds.
func (m *Manager) collect(ctx context.Context, wanted map[string]bool, now time.Time) {
	all, err := m.opts.Store.Bindings(ctx)
	if err != nil {
		return
	}
	for _, b := range all {
		if !wanted[b.Key] && (b.NodeID == "" || b.LeaseUntil.Before(now)) {
			_ = m.opts.Store.DeleteBinding(ctx, b.Key)
		}
	}
}

// start runs a line for b.
func (m *Manager) start(b *numbers.Binding) {
	reg, err := m.opts.Registrar.NewLine(b.Binding)
	if m.complain("start "+b.Key, err) {
		m.opts.Log.Warn().Err(err).Str("binding", b.Key).Str("registrar", b.Registrar).Msg("registration: cannot start; trying again at each sync")
	}
	if err != nil {
		return
	}
	l := newLine(m, b, reg)
	m.mu.Lock()
	m.lines[b.Key] = l
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		l.run()
	}()
}

// drop stops the line of key (without waiting for it).
func (m *Manager) drop(key string, how stopKind) {
	m.mu.Lock()
	l := m.lines[key]
	delete(m.lines, key)
	m.mu.Unlock()
	if l != nil {
		l.stop(how)
	}
}

// complain records err (nil: none) as the state of subject and reports
// whether it is a new error, to be logged.
func (m *Manager) complain(subject string, err error) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.complaints, subject)
		return false
	}
	if m.complaints[subject] == err.Error() {
		return false
	}
	m.complaints[subject] = err.Error()
	return true
}

// sameBinding reports whether a line for a can go on serving b.
func sameBinding(a, b *numbers.Binding) bool {
	return a.Password == b.Password && a.Expires == b.Expires && slices.Equal(a.Numbers, b.Numbers) &&
		slices.Equal(a.NumberIDs, b.NumberIDs) && a.Registrar == b.Registrar && a.Transport == b.Transport &&
		a.OutboundProxy == b.OutboundProxy && a.Username == b.Username && a.AuthUsername == b.AuthUsername &&
		a.ContactUser == b.ContactUser
}
