package records_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/media"
	"switchboard/records"
	"switchboard/store"
)

// stubLeg is a phone side that rings and takes its refusal: enough for a
// call that the router turns down.
type stubLeg struct{ ctx context.Context }

func (l stubLeg) ID() string { return "c-retry" }
func (l stubLeg) Info() call.LegInfo {
	return call.LegInfo{Kind: "sip", From: "+14155550123", To: "+18005550100", Received: time.Now(),
		Route: call.Route{NumberID: "pn_a", PhoneNumber: "+18005550100", TeamID: "team_a", AgentID: "ag_1"}}
}
func (l stubLeg) Context() context.Context                                               { return l.ctx }
func (stubLeg) Start(call.LegSink, call.LegOptions) error                                { return nil }
func (stubLeg) Ring() error                                                              { return nil }
func (stubLeg) Answer(context.Context) error                                             { return nil }
func (stubLeg) Reject(int, string, time.Duration) error                                  { return nil }
func (stubLeg) Hangup(context.Context, string, ...call.Header) error                     { return nil }
func (stubLeg) Transfer(context.Context, string, func(status int), ...call.Header) error { return nil }
func (stubLeg) Audio() call.Audio                                                        { return nil }
func (stubLeg) SendDTMF(context.Context, string) error                                   { return nil }
func (stubLeg) Hold(bool)                                                                {}
func (stubLeg) Stats() media.StatsSnapshot                                               { return media.StatsSnapshot{} }
func (stubLeg) Close() error                                                             { return nil }

// failingStore fails every call record write while down is set, and
// reports each refused write on refused (when set; never blocking).
type failingStore struct {
	store.Store
	down    *atomic.Bool
	refused chan struct{}
}

func (s failingStore) Calls() store.CallStore {
	return failingCalls{s.Store.Calls(), s.down, s.refused}
}

type failingCalls struct {
	store.CallStore
	down    *atomic.Bool
	refused chan struct{}
}

func (c failingCalls) refuse() error {
	select {
	case c.refused <- struct{}{}:
	default:
	}
	return errors.New("store down")
}

func (c failingCalls) Put(ctx context.Context, r *store.Call) error {
	if c.down.Load() {
		return c.refuse()
	}
	return c.CallStore.Put(ctx, r)
}

func (c failingCalls) PutAll(ctx context.Context, rs []*store.Call) error {
	if c.down.Load() {
		return c.refuse()
	}
	return c.CallStore.PutAll(ctx, rs)
}

type rejectAll struct{}

func (rejectAll) Conversation(context.Context, call.Phone) (call.Conversation, error) {
	return nil, &call.RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errors.New("no agent")}
}

// TestFinalRecordIsRetried: a call that ends while the store refuses
// writes stays served from the recorder, and Run writes its final record
// once the store is back.
func TestFinalRecordIsRetried(t *testing.T) {
	e := newEnv(t)
	var down atomic.Bool
	down.Store(true)
	refused := make(chan struct{}, 16)
	rec := records.NewRecorder(failingStore{e.st, &down, refused}, records.RecorderOptions{AliveInterval: 20 * time.Millisecond})
	m, err := call.NewManager(call.Options{Router: rejectAll{}, Journal: rec}, zerolog.Nop())
	require.NoError(t, err)
	m.Run(context.Background(), stubLeg{ctx: context.Background()}, zerolog.Nop())

	_, err = e.st.Calls().Get(context.Background(), "c-retry")
	require.ErrorIs(t, err, store.ErrNotFound, "nothing could be written")
	snap, ok := rec.LiveSnapshot("c-retry")
	require.True(t, ok, "the call is still served from the recorder")
	require.Equal(t, call.StateEnded, snap.State)
	require.Len(t, rec.Unstored(), 1)

	for len(refused) > 0 { // the writes at the call's end
		<-refused
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-refused: // Run retried the write
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not retry the final record")
	}
	_, ok = rec.LiveSnapshot("c-retry")
	require.True(t, ok, "retried, still failing")
	down.Store(false)
	require.Eventually(t, func() bool {
		c, err := e.st.Calls().Get(context.Background(), "c-retry")
		return err == nil && c.State == "ended" && c.EndedBy == call.EndedByRejected
	}, 2*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { _, ok := rec.LiveSnapshot("c-retry"); return !ok }, time.Second, 10*time.Millisecond)
}
