package records_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/records"
	"switchboard/store"
)

// namedLeg is a stubLeg with its own call id.
type namedLeg struct {
	stubLeg
	id string
}

func (l namedLeg) ID() string { return l.id }

// gatedStore records the batches of call records written, and holds each
// while its gate is shut; PutAll of several records fails while failBatch
// is set, and Put fails for the id in badID.
type gatedStore struct {
	store.Store
	g *gate
}

type gate struct {
	mu        sync.Mutex
	shut      chan struct{} // nil: open
	sizes     []int
	failBatch bool
	badID     string
}

func (s gatedStore) Calls() store.CallStore { return gatedCalls{s.Store.Calls(), s.g} }

type gatedCalls struct {
	store.CallStore
	g *gate
}

func (c gatedCalls) PutAll(ctx context.Context, rs []*store.Call) error {
	c.g.mu.Lock()
	c.g.sizes = append(c.g.sizes, len(rs))
	shut, fail := c.g.shut, c.g.failBatch && len(rs) > 1
	c.g.mu.Unlock()
	if shut != nil {
		<-shut
	}
	if fail {
		return errors.New("batch refused")
	}
	for _, r := range rs {
		if r.ID == c.g.badID {
			return errors.New("bad record " + r.ID)
		}
	}
	return c.CallStore.PutAll(ctx, rs)
}

func (c gatedCalls) Put(ctx context.Context, r *store.Call) error {
	if r.ID == c.g.badID {
		return errors.New("bad record " + r.ID)
	}
	return c.CallStore.Put(ctx, r)
}

func (g *gate) close() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = make(chan struct{})
	return g.shut
}

func (g *gate) batches() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// heldRouter keeps every call ringing (in routing) until release is
// closed, then turns it down.
type heldRouter struct{ release chan struct{} }

func (h heldRouter) Conversation(ctx context.Context, _ call.Phone) (call.Conversation, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return nil, &call.RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errors.New("released")}
}

// checkedJournal is the recorder, checking that Admitted and Ended return
// only once the record they wrote is in the store.
type checkedJournal struct {
	*records.Recorder
	st   store.Store
	mu   sync.Mutex
	errs []string
}

func (j *checkedJournal) check(c *call.Call, state string) {
	got, err := j.st.Calls().Get(context.Background(), c.ID())
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case err != nil:
		j.errs = append(j.errs, c.ID()+": "+err.Error())
	case state == "ended" && got.State != state:
		j.errs = append(j.errs, c.ID()+": stored as "+got.State+" after its end")
	}
}

func (j *checkedJournal) Admitted(c *call.Call) { j.Recorder.Admitted(c); j.check(c, "") }
func (j *checkedJournal) Ended(c *call.Call)    { j.Recorder.Ended(c); j.check(c, "ended") }

// TestRecordsAreBatchedAndCoalesced: the calls whose records change while
// a batch is being written are written together in the next transaction,
// each once and in its latest state; Admitted and Ended still return only
// once their record is stored.
func TestRecordsAreBatchedAndCoalesced(t *testing.T) {
	e := newEnv(t)
	g := &gate{}
	rec := records.NewRecorder(gatedStore{e.st, g}, records.RecorderOptions{})
	j := &checkedJournal{Recorder: rec, st: e.st}
	release := make(chan struct{})
	m, err := call.NewManager(call.Options{Router: heldRouter{release}, Journal: j}, zerolog.Nop())
	require.NoError(t, err)
	ctx := context.Background()

	a := m.Start(ctx, namedLeg{stubLeg{ctx: ctx}, "c-a"}, zerolog.Nop(), nil)
	require.Equal(t, []int{1}, g.batches(), "an idle writer writes a record at once")

	shut := g.close()
	var started sync.WaitGroup
	for _, id := range []string{"c-b", "c-c", "c-d"} {
		started.Add(1)
		go func() { defer started.Done(); m.Start(ctx, namedLeg{stubLeg{ctx: ctx}, id}, zerolog.Nop(), nil) }()
		if id == "c-b" { // c-b's batch is the one held
			require.Eventually(t, func() bool { return len(g.batches()) == 2 }, 2*time.Second, time.Millisecond)
		}
	}
	for i := range 5 {
		a.Note(call.Note{Kind: call.NoteTransfer, Text: "sip:desk" + string(rune('0'+i)) + "@example.com"})
	}
	require.Eventually(t, func() bool { return rec.Queued() == 3 }, 2*time.Second, time.Millisecond,
		"c-c, c-d and c-a (changed five times) wait for the next batch, each once")
	close(shut)
	started.Wait()
	require.Equal(t, []int{1, 1, 3}, g.batches())
	stored, err := e.st.Calls().Get(ctx, "c-a")
	require.NoError(t, err)
	var notes []json.RawMessage
	require.NoError(t, json.Unmarshal(stored.Notes, &notes))
	require.Len(t, notes, 5, "c-a's record is its latest state")

	close(release)
	m.Wait()
	for _, id := range []string{"c-a", "c-b", "c-c", "c-d"} {
		c, err := e.st.Calls().Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "ended", c.State, id)
		_, live := rec.LiveSnapshot(id)
		require.False(t, live, "%s: stored, no longer served from the recorder", id)
	}
	require.Empty(t, j.errs)
}

// TestBadRecordDoesNotHoldBackItsBatch: when a batch's transaction fails,
// each of its records is written alone, so the good ones are stored; the
// bad one is written again by Run.
func TestBadRecordDoesNotHoldBackItsBatch(t *testing.T) {
	e := newEnv(t)
	g := &gate{failBatch: true, badID: "c-bad"}
	rec := records.NewRecorder(gatedStore{e.st, g}, records.RecorderOptions{AliveInterval: 20 * time.Millisecond})
	release := make(chan struct{})
	m, err := call.NewManager(call.Options{Router: heldRouter{release}, Journal: rec}, zerolog.Nop())
	require.NoError(t, err)
	ctx := context.Background()
	m.Start(ctx, namedLeg{stubLeg{ctx: ctx}, "c-first"}, zerolog.Nop(), nil)
	shut := g.close()
	var started sync.WaitGroup
	for _, id := range []string{"c-held", "c-good", "c-bad"} {
		started.Add(1)
		go func() { defer started.Done(); m.Start(ctx, namedLeg{stubLeg{ctx: ctx}, id}, zerolog.Nop(), nil) }()
		if id == "c-held" {
			require.Eventually(t, func() bool { return len(g.batches()) == 2 }, 2*time.Second, time.Millisecond)
		}
	}
	require.Eventually(t, func() bool { return rec.Queued() == 2 }, 2*time.Second, time.Millisecond)
	close(shut)
	started.Wait()
	_, err = e.st.Calls().Get(ctx, "c-good")
	require.NoError(t, err, "stored alone after its batch failed")
	_, err = e.st.Calls().Get(ctx, "c-bad")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Len(t, rec.Unstored(), 1)

	// Run writes it again once the store takes it.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(rctx) }()
	g.mu.Lock()
	g.badID = ""
	g.mu.Unlock()
	require.Eventually(t, func() bool { _, err := e.st.Calls().Get(ctx, "c-bad"); return err == nil }, 2*time.Second, 5*time.Millisecond)
	close(release)
	m.Wait()
	cancel()
	<-done
	require.Empty(t, rec.Unstored())
}
