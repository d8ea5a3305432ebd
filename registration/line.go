package registration

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/numbers"
	"switchboard/sip"
	"switchboard/store"
)

// stopKind says why a line stops, and so what it does on its way out.
type stopKind int

const (
	// stopUnregister: the appliance shuts down, or another node took the
	// binding: unregister, write off, give the lease up.
	stopUnregister stopKind = iota + 1
	// stopRemoved: no number wants the binding any more: unregister and
	// forget its record.
	stopRemoved
	// stopRestart: the settings changed; the next line registers the
	// same contact again at once.
	stopRestart
)

var errStopped = errors.New("registration: line stopped")

// line is one held binding: its goroutine registers, refreshes, retries
// and keeps the path open until it is stopped.
type line struct {
	m   *Manager
	b   *numbers.Binding
	reg Line
	log zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	how stopKind
	// state is what the line last wrote; registered says whether the
	// registrar holds our contact (so there is something to unregister).
	state      store.RegistrationBinding
	registered bool
}

func newLine(m *Manager, b *numbers.Binding, reg Line) *line {
	ctx, cancel := context.WithCancel(context.Background())
	return &line{m: m, b: b, reg: reg, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		log: m.opts.Log.With().Str("binding", b.Key).Str("registrar", b.Registrar).Str("username", b.Username).
			Strs("phone_numbers", b.Numbers).Logger()}
}

// stop asks the line to stop for why (the first reason given wins).
func (l *line) stop(how stopKind) {
	l.mu.Lock()
	if l.how == 0 {
		l.how = how
	}
	l.mu.Unlock()
	l.cancel()
}

// wait waits until the line's goroutine is done.
func (l *line) wait() { <-l.done }

// run registers until stopped, then leaves as stop asked.
func (l *line) run() {
	defer close(l.done)
	defer l.reg.Close()
	l.set(l.ctx, store.RegistrationRegistering, time.Time{}, 0, "")
	failures := 0
	for {
		res, err := l.exchange(l.reg.Register)
		if l.ctx.Err() != nil {
			break
		}
		var wait time.Duration
		switch {
		case err == nil && res.Expires > 0:
			failures = 0
			l.mu.Lock()
			l.registered = true
			l.mu.Unlock()
			l.set(l.ctx, store.RegistrationRegistered, time.Now().Add(res.Expires), res.Status, "")
			wait = l.m.refreshIn(res.Expires)
		default:
			if err == nil {
				err = errors.New("the registrar granted no time to our contact")
			}
			failures++
			status := 0
			var re *sip.RegisterError
			if errors.As(err, &re) {
				status = re.Status
			}
			l.set(l.ctx, store.RegistrationFailed, time.Time{}, status, err.Error())
			wait = l.m.backoff(failures)
			l.log.Debug().Err(err).Int("failures", failures).Dur("retry_in", wait).Msg("registration: REGISTER failed")
		}
		if !l.sleep(wait) {
			break
		}
	}
	l.leave()
}

// exchange runs one REGISTER exchange (or unregister) within the
// manager's timeout and counts it.
func (l *line) exchange(f func(context.Context) (sip.Registered, error)) (sip.Registered, error) {
	ctx, cancel := context.WithTimeout(l.ctx, l.m.opts.Timeout)
	defer cancel()
	res, err := f(ctx)
	if l.ctx.Err() != nil && err != nil {
		return res, errStopped // stopped while it ran: not the registrar's failure
	}
	var re *sip.RegisterError
	switch {
	case err == nil:
		l.m.opts.Metrics.exchanged(res.Status)
	case errors.As(err, &re):
		l.m.opts.Metrics.exchanged(re.Status)
	}
	return res, err
}

// sleep waits d, pinging the registrar's path every keep-alive interval
// while registered; false when the line was stopped.
func (l *line) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var ping <-chan time.Time
	l.mu.Lock()
	registered := l.state.State == store.RegistrationRegistered
	l.mu.Unlock()
	if ka := l.m.opts.KeepAlive; ka > 0 && registered && ka < d {
		t := time.NewTicker(ka)
		defer t.Stop()
		ping = t.C
	}
	for {
		select {
		case <-l.ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-ping:
			ctx, cancel := context.WithTimeout(l.ctx, l.m.opts.Timeout)
			if err := l.reg.KeepAlive(ctx); err != nil && l.ctx.Err() == nil {
				l.log.Debug().Err(err).Msg("registration: keep-alive failed")
			}
			cancel()
		}
	}
}

// leave does what the stop asked: unregister (within the timeout), then
// write the binding off and give its lease up, or forget it.
func (l *line) leave() {
	l.mu.Lock()
	how, registered := l.how, l.registered
	l.mu.Unlock()
	if how == stopRestart {
		l.mu.Lock()
		state := l.state.State
		l.mu.Unlock()
		l.m.opts.Metrics.moved(state, "")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.m.opts.Timeout)
	defer cancel()
	if registered {
		err := l.reg.Unregister(ctx)
		status := 200
		var re *sip.RegisterError
		if errors.As(err, &re) {
			status = re.Status
		}
		l.m.opts.Metrics.exchanged(status)
		if err != nil {
			l.log.Warn().Err(err).Msg("registration: unregister failed; the registrar drops our contact when it expires")
		}
	}
	l.mu.Lock()
	last := l.state.LastStatus
	l.mu.Unlock()
	l.set(ctx, store.RegistrationOff, time.Time{}, last, "")
	st := l.m.opts.Store
	if how == stopRemoved {
		if err := st.DeleteBinding(ctx, l.b.Key); err != nil {
			l.log.Warn().Err(err).Msg("registration: cannot forget the binding")
		}
		return
	}
	if err := st.Release(ctx, l.b.Key, l.m.opts.NodeID); err != nil {
		l.log.Warn().Err(err).Msg("registration: cannot give the lease up; another node takes it when it runs out")
	}
}

// refreshIn is when to refresh a binding granted for d: RefreshBefore
// before it ends, but not before half of it passed.
func (m *Manager) refreshIn(d time.Duration) time.Duration {
	return max(d-m.opts.RefreshBefore, d/2)
}

// backoff is the wait after the nth failure in a row: RetryMin doubled
// n-1 times, at most RetryMax, give or take a tenth (so that the nodes
// of a fleet, or the lines of one registrar, do not retry in step).
func (m *Manager) backoff(n int) time.Duration {
	d := m.opts.RetryMin
	for i := 1; i < n && d < m.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, m.opts.RetryMax)
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
