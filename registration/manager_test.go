package registration

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/numbers"
	"switchboard/sip"
	"switchboard/store"
	"switchboard/webhook"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The doubles below stand in for the SIP server, the numbers and the
// store so that the schedule (refreshes, backoff, leases) runs on
// synctest's clock; the same manager runs against sipp and Kamailio in
// test/registration_test.go.

// fakeLine answers each Register with the next result of script (the
// last one again when it runs out) and records when each call came.
type fakeLine struct {
	mu         sync.Mutex
	script     []result
	registers  []time.Time
	pings      []time.Time
	unregister int
	closed     bool
}

type result struct {
	res sip.Registered
	err error
}

func (f *fakeLine) Register(context.Context) (sip.Registered, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registers = append(f.registers, time.Now())
	r := f.script[min(len(f.registers), len(f.script))-1]
	return r.res, r.err
}

func (f *fakeLine) Unregister(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unregister++
	return nil
}

func (f *fakeLine) KeepAlive(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pings = append(f.pings, time.Now())
	return nil
}

func (f *fakeLine) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
}

func (f *fakeLine) snapshot() (registers, pings []time.Time, unregister int, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.registers...), append([]time.Time(nil), f.pings...), f.unregister, f.closed
}

type fakeRegistrar struct {
	mu    sync.Mutex
	lines map[string]*fakeLine // by contact user
	next  func() *fakeLine
}

func (r *fakeRegistrar) NewLine(b sip.Binding) (Line, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.next()
	r.lines[b.ContactUser] = l
	return l, nil
}

func (r *fakeRegistrar) line(user string) *fakeLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines[user]
}

type fakeNumbers struct {
	mu       sync.Mutex
	bindings []*numbers.Binding
	hooks    map[string]*numbers.WebhookDetails
	err      error
}

func (n *fakeNumbers) Bindings(context.Context) ([]*numbers.Binding, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return nil, n.err
	}
	return append([]*numbers.Binding(nil), n.bindings...), nil
}

func (n *fakeNumbers) Webhook(_ context.Context, id string) (*numbers.WebhookDetails, error) {
	if w := n.hooks[id]; w != nil {
		return w, nil
	}
	return nil, numbers.ErrNoWebhook
}

func (n *fakeNumbers) set(bs ...*numbers.Binding) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bindings = bs
}

// memStore keeps bindings as store.RegistrationStore does.
type memStore struct {
	mu sync.Mutex
	m  map[string]*store.RegistrationBinding
}

func (s *memStore) Bindings(context.Context) ([]*store.RegistrationBinding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*store.RegistrationBinding
	for _, b := range s.m {
		c := *b
		out = append(out, &c)
	}
	return out, nil
}

func (s *memStore) Claim(_ context.Context, key, node string, until, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.m[key]
	if b == nil {
		b = &store.RegistrationBinding{Key: key, State: store.RegistrationOff}
		s.m[key] = b
	}
	if b.NodeID != node && b.NodeID != "" && !b.LeaseUntil.Before(now) {
		return false, nil
	}
	b.NodeID, b.LeaseUntil = node, until
	return true, nil
}

func (s *memStore) Release(_ context.Context, key, node string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.m[key]; b != nil && b.NodeID == node {
		b.NodeID, b.LeaseUntil = "", time.Time{}
	}
	return nil
}

func (s *memStore) SetState(_ context.Context, nb *store.RegistrationBinding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.m[nb.Key]
	if b == nil || b.NodeID != nb.NodeID {
		return store.ErrNotFound
	}
	b.State, b.Expires, b.LastStatus, b.LastError, b.UpdateTime = nb.State, nb.Expires, nb.LastStatus, nb.LastError, nb.UpdateTime
	return nil
}

func (s *memStore) DeleteBinding(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memStore) get(key string) (store.RegistrationBinding, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.m[key]
	if b == nil {
		return store.RegistrationBinding{}, false
	}
	return *b, true
}

type hooks struct {
	mu     sync.Mutex
	events []webhook.Event
}

func (h *hooks) DeliverAsync(_ webhook.Target, ev webhook.Event, _ func(webhook.Result, error)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	return nil
}

func (h *hooks) states() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		out = append(out, e.Data.(Event).Registration.State)
	}
	return out
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type rig struct {
	m     *Manager
	nums  *fakeNumbers
	reg   *fakeRegistrar
	st    *memStore
	hooks *hooks
	logs  *syncBuf
	stop  context.CancelFunc
	done  chan struct{}
}

func binding(key, user string) *numbers.Binding {
	return &numbers.Binding{Key: key, NumberIDs: []string{"pn_" + user}, Binding: sip.Binding{Registrar: "sip:pbx.test", Username: user,
		ContactUser: user, Password: "pw", Expires: 300 * time.Second, Numbers: []string{"+14155550100"}}}
}

// newRig starts a manager of node over st (shared by the nodes of a
// fleet) whose lines follow script.
func newRig(t *testing.T, node string, st *memStore, script []result, bs ...*numbers.Binding) *rig {
	r := &rig{nums: &fakeNumbers{bindings: bs, hooks: map[string]*numbers.WebhookDetails{
		"pn_alice": {WebhookID: "wh_1", URL: "http://127.0.0.1:1/hook", SigningSecret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"}}},
		reg: &fakeRegistrar{lines: map[string]*fakeLine{}, next: func() *fakeLine { return &fakeLine{script: script} }},
		st:  st, hooks: &hooks{}, logs: &syncBuf{}, done: make(chan struct{})}
	var err error
	r.m, err = New(Options{NodeID: node, Numbers: r.nums, Registrar: r.reg, Store: st, Webhooks: r.hooks,
		Metrics: NewMetrics(nil), Log: zerolog.New(r.logs), SyncInterval: 5 * time.Second, LeaseTTL: 15 * time.Second,
		RetryMin: time.Second, RetryMax: 8 * time.Second, RefreshBefore: 30 * time.Second, KeepAlive: 25 * time.Second,
		Timeout: 10 * time.Second})
	require.NoError(t, err)
	return r.start(t)
}

func (r *rig) shutdown() {
	r.stop()
	<-r.done
}

// start runs the manager until the test ends (or shutdown).
func (r *rig) start(t *testing.T) *rig {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { defer close(r.done); r.m.Run(ctx) }()
	t.Cleanup(r.shutdown)
	return r
}

func ok(expires time.Duration) result {
	return result{res: sip.Registered{Status: 200, Expires: expires}}
}

func refused(status int) result {
	return result{err: &sip.RegisterError{Status: status, Reason: "Unauthorized"}}
}

// gaps are the times between successive calls.
func gaps(ts []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i].Sub(ts[i-1]))
	}
	return out
}

// TestRefreshAndKeepAlive: a binding granted 120 s is refreshed 30 s
// before it ends; one granted 40 s half way; the path is pinged every
// 25 s between refreshes; at shutdown it is unregistered, written off and
// its lease given up.
func TestRefreshAndKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{m: map[string]*store.RegistrationBinding{}}
		r := newRig(t, "node-a", st, []result{ok(120 * time.Second), ok(40 * time.Second), ok(40 * time.Second)}, binding("k1", "alice"))
		time.Sleep(200 * time.Second)
		synctest.Wait()
		b, _ := st.get("k1")
		require.Equal(t, store.RegistrationRegistered, b.State)
		require.Equal(t, "node-a", b.NodeID)
		require.Equal(t, 200, b.LastStatus)
		line := r.reg.line("alice")
		regs, pings, _, _ := line.snapshot()
		require.Equal(t, []time.Duration{90 * time.Second, 20 * time.Second, 20 * time.Second, 20 * time.Second, 20 * time.Second, 20 * time.Second}, gaps(regs),
			"refresh 30 s before a 120 s grant ends, half way through a 40 s one")
		require.Len(t, pings, 3, "pings at 25, 50 and 75 s, while the first grant runs")
		require.Equal(t, regs[0].Add(25*time.Second), pings[0])

		r.shutdown()
		_, _, unreg, closed := line.snapshot()
		require.Equal(t, 1, unreg)
		require.True(t, closed)
		b, _ = st.get("k1")
		require.Equal(t, store.RegistrationOff, b.State)
		require.Empty(t, b.NodeID, "the lease is given up")
		require.Equal(t, []string{"registered", "off"}, r.hooks.states(), "the number's webhook hears each change once")
		ev := r.hooks.events[0]
		require.Equal(t, webhook.TypePhoneNumberRegistration, ev.Type)
		require.Equal(t, "+14155550100", ev.Data.(Event).PhoneNumber)
		require.NotNil(t, ev.Data.(Event).Registration.ExpiresAt)
	})
}

// TestFailureBacksOffWithoutFlood: a registrar that refuses the password
// sees retries after 1, 2, 4 and 8 s, then every 8 s (give or take a
// tenth); the state is failed with the status; one log line and one
// webhook say so, however many retries follow. When the registrar accepts
// again, that is one more line.
func TestFailureBacksOffWithoutFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{m: map[string]*store.RegistrationBinding{}}
		script := make([]result, 8)
		for i := range script {
			script[i] = refused(401)
		}
		script = append(script, ok(300*time.Second))
		r := newRig(t, "node-a", st, script, binding("k1", "alice"))
		time.Sleep(45 * time.Second)
		synctest.Wait()
		b, _ := st.get("k1")
		require.Equal(t, store.RegistrationFailed, b.State)
		require.Equal(t, 401, b.LastStatus)
		require.Contains(t, b.LastError, "401")
		regs, _, _, _ := r.reg.line("alice").snapshot()
		g := gaps(regs)
		require.GreaterOrEqual(t, len(g), 5, "%v", g)
		for i, d := range g {
			want := min(time.Second<<i, 8*time.Second)
			require.InDelta(t, float64(want), float64(d), float64(want)/10+1, "retry %d after %v: %v", i+1, d, g)
		}
		require.Equal(t, 1, strings.Count(r.logs.String(), "registration: failed"), r.logs.String())
		require.Equal(t, []string{"failed"}, r.hooks.states())

		time.Sleep(30 * time.Second)
		synctest.Wait()
		b, _ = st.get("k1")
		require.Equal(t, store.RegistrationRegistered, b.State)
		require.Equal(t, 1, strings.Count(r.logs.String(), "registration: registered"))
		require.Equal(t, []string{"failed", "registered"}, r.hooks.states())
		r.shutdown()
	})
}

// TestRemovedAndChanged: a binding its numbers drop is unregistered and
// forgotten; one whose settings change is registered again by a new line
// (no unregister in between); a change on this node is seen at once.
func TestRemovedAndChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{m: map[string]*store.RegistrationBinding{}}
		changes := make(chan struct{}, 1)
		r := &rig{}
		alice, bob := binding("k1", "alice"), binding("k2", "bob")
		r = newRigWithChanges(t, "node-a", st, changes, []result{ok(300 * time.Second)}, alice, bob)
		time.Sleep(time.Second)
		synctest.Wait()
		first := r.reg.line("alice")

		changed := *alice
		changed.Password = "new-pw"
		r.nums.set(&changed)
		changes <- struct{}{}
		synctest.Wait()
		_, _, unreg, closed := first.snapshot()
		require.True(t, closed)
		require.Zero(t, unreg, "a changed password re-registers the same contact: nothing to remove")
		second := r.reg.line("alice")
		require.NotSame(t, first, second)
		regs, _, _, _ := second.snapshot()
		require.Len(t, regs, 1)
		_, _, unreg, _ = r.reg.line("bob").snapshot()
		require.Equal(t, 1, unreg, "bob's number dropped its registration")
		_, ok := st.get("k2")
		require.False(t, ok, "and its record is forgotten")
		r.shutdown()
	})
}

func newRigWithChanges(t *testing.T, node string, st *memStore, changes chan struct{}, script []result, bs ...*numbers.Binding) *rig {
	r := &rig{nums: &fakeNumbers{bindings: bs, hooks: map[string]*numbers.WebhookDetails{}},
		reg: &fakeRegistrar{lines: map[string]*fakeLine{}, next: func() *fakeLine { return &fakeLine{script: script} }},
		st:  st, hooks: &hooks{}, logs: &syncBuf{}, done: make(chan struct{})}
	var err error
	r.m, err = New(Options{NodeID: node, Numbers: r.nums, Registrar: r.reg, Store: st, Webhooks: r.hooks, Log: zerolog.New(r.logs),
		SyncInterval: time.Hour, LeaseTTL: 3 * time.Hour, Changes: changes})
	require.NoError(t, err)
	return r.start(t)
}

// TestTakeover: two nodes on one store. While one holds the binding the
// other waits; a clean stop hands it over at the other's next sync; a
// holder that died (its lease is not renewed) loses it when the lease
// ends; a holder that finds its lease taken removes its own contact and
// leaves the new holder's record alone.
func TestTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{m: map[string]*store.RegistrationBinding{}}
		a := newRig(t, "node-a", st, []result{ok(300 * time.Second)}, binding("k1", "alice"))
		time.Sleep(time.Second)
		synctest.Wait()
		b := newRig(t, "node-b", st, []result{ok(300 * time.Second)}, binding("k1", "alice"))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		require.Nil(t, b.reg.line("alice"), "node b waits while node a renews its lease")

		stopped := time.Now()
		a.shutdown()
		time.Sleep(6 * time.Second)
		synctest.Wait()
		got, _ := st.get("k1")
		require.Equal(t, "node-b", got.NodeID, "a clean stop hands the binding over at the next sync")
		require.Equal(t, store.RegistrationRegistered, got.State)
		regs, _, _, _ := b.reg.line("alice").snapshot()
		require.LessOrEqual(t, regs[0].Sub(stopped), 5*time.Second)
		b.shutdown()

		// A holder that died right after renewing: its lease runs out.
		died := time.Now()
		_, err := st.Claim(context.Background(), "k1", "node-dead", died.Add(15*time.Second), died)
		require.NoError(t, err)
		c := newRig(t, "node-c", st, []result{ok(300 * time.Second)}, binding("k1", "alice"))
		time.Sleep(25 * time.Second)
		synctest.Wait()
		got, _ = st.get("k1")
		require.Equal(t, "node-c", got.NodeID)
		regs, _, _, _ = c.reg.line("alice").snapshot()
		require.Len(t, regs, 1)
		require.GreaterOrEqual(t, regs[0].Sub(died), 15*time.Second, "not before the lease ends")
		require.LessOrEqual(t, regs[0].Sub(died), 20*time.Second, "within a sync after it ends")

		// Node c finds another node holding its lease (it was too slow to
		// renew): it removes its own contact only.
		st.mu.Lock()
		st.m["k1"].NodeID, st.m["k1"].LeaseUntil = "node-d", time.Now().Add(time.Hour)
		st.mu.Unlock()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		_, _, unreg, closed := c.reg.line("alice").snapshot()
		require.Equal(t, 1, unreg)
		require.True(t, closed)
		got, _ = st.get("k1")
		require.Equal(t, "node-d", got.NodeID)
		require.Equal(t, store.RegistrationRegistered, got.State, "node c's way out does not write over node d's state")
	})
}

// TestStoreTroubleLoggedOnce: while the numbers cannot be read the lines
// go on as they are, and the trouble is logged once, not at every sync.
func TestStoreTroubleLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{m: map[string]*store.RegistrationBinding{}}
		r := newRig(t, "node-a", st, []result{ok(300 * time.Second)}, binding("k1", "alice"))
		time.Sleep(time.Second)
		synctest.Wait()
		r.nums.mu.Lock()
		r.nums.err = errors.New("database is down")
		r.nums.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, 1, strings.Count(r.logs.String(), "cannot read the numbers' registrations"), r.logs.String())
		_, _, unreg, closed := r.reg.line("alice").snapshot()
		require.Zero(t, unreg, "the line goes on")
		require.False(t, closed)
		b, _ := st.get("k1")
		require.Equal(t, store.RegistrationRegistered, b.State)
	})
}
