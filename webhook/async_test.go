package webhook

import (
	"bytes"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// doneLog collects async completions.
type doneLog struct {
	mu      sync.Mutex
	results []Result
	errs    []error
}

func (l *doneLog) done(r Result, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = append(l.results, r)
	l.errs = append(l.errs, err)
}

func (l *doneLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

// blockingReceiver holds every request until release is closed (or the
// client goes away) and reports each arrival on arrived.
func blockingReceiver(t *testing.T) (rc *receiver, arrived chan struct{}, release chan struct{}) {
	arrived = make(chan struct{}, 16)
	release = make(chan struct{})
	rc = newReceiver(t, newSecret(t), func(_ int, w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	})
	return rc, arrived, release
}

func TestDeliverAsyncQueueFullAndCloseWaits(t *testing.T) {
	rc, arrived, release := blockingReceiver(t)
	var logs bytes.Buffer
	d := NewDispatcher(Options{Workers: 1, QueueSize: 1}, zerolog.New(&logs))
	var dl doneLog
	now := time.Now()
	ended := NewCallEnded(now, CallEnded{CallID: "c1", Reason: "hangup", EndedBy: EndedByCaller})
	transfer := NewCallTransfer(now, CallTransfer{CallID: "c1", TargetURI: "sip:100@pbx", Status: TransferCompleted, SIPStatus: 200})
	dropped := NewCallEnded(now, CallEnded{CallID: "c2", Reason: "hangup", EndedBy: EndedByAgent})

	require.NoError(t, d.DeliverAsync(rc.target(), ended, dl.done))
	<-arrived // the worker is busy with the first event
	require.NoError(t, d.DeliverAsync(rc.target(), transfer, dl.done), "queued")

	// A blocking send would hang here: the worker and the queue are full
	// until release.
	require.ErrorIs(t, d.DeliverAsync(rc.target(), dropped, dl.done), ErrQueueFull)
	require.Contains(t, logs.String(), dropped.ID)
	require.Contains(t, logs.String(), "queue full")
	require.Zero(t, dl.len())

	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	// Close has begun once the dispatcher refuses new events; the two
	// accepted ones are still held by the receiver, so it cannot return.
	require.Eventually(t, d.closed.Load, 5*time.Second, time.Millisecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while deliveries were in flight", err)
	default:
	}
	close(release)
	require.NoError(t, <-closed, "Close waits for the queued and in-flight deliveries")
	require.Equal(t, 2, dl.len(), "both accepted events completed before Close returned")
	for i, r := range dl.results {
		require.NoError(t, dl.errs[i])
		require.True(t, r.Delivered)
	}
	require.Equal(t, []string{ended.ID, transfer.ID}, []string{dl.results[0].EventID, dl.results[1].EventID})
	reqs := rc.requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.NoError(t, r.verifyErr)
	}
}

func TestDeliverAsyncCloseCancelsAfterTimeout(t *testing.T) {
	rc, arrived, _ := blockingReceiver(t) // never released
	d := NewDispatcher(Options{Workers: 1, QueueSize: 4, CloseTimeout: 100 * time.Millisecond}, testLogger(t))
	var dl doneLog
	first := NewCallEnded(time.Now(), CallEnded{CallID: "c1", Reason: "hangup", EndedBy: EndedByCaller})
	second := NewCallEnded(time.Now(), CallEnded{CallID: "c2", Reason: "hangup", EndedBy: EndedByCaller})
	require.NoError(t, d.DeliverAsync(rc.target(), first, dl.done))
	require.NoError(t, d.DeliverAsync(rc.target(), second, dl.done))
	<-arrived

	err := d.Close()
	require.Error(t, err, "Close had to cancel")
	require.Contains(t, err.Error(), "cancelled")
	require.Equal(t, err, d.Close(), "idempotent")
	require.Equal(t, 2, dl.len(), "done runs for every accepted event, cancelled or not")
	for i, r := range dl.results {
		require.False(t, r.Delivered)
		require.Error(t, dl.errs[i])
	}
	require.Len(t, dl.results[0].Attempts, 1)
	require.Empty(t, dl.results[1].Attempts, "the queued event was cancelled before its first attempt")
}

func TestDeliverAsyncNilDone(t *testing.T) {
	rc := newReceiver(t, newSecret(t), nil)
	d := NewDispatcher(Options{}, testLogger(t))
	require.NoError(t, d.DeliverAsync(rc.target(), NewCallEnded(time.Now(), CallEnded{CallID: "c"}), nil))
	require.NoError(t, d.Close())
	require.Len(t, rc.requests(), 1)
}
