package media

import (
	"container/heap"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler runs the frame clocks of many sessions on a few goroutines: a
// worker per CPU, each owning a share of the sessions in a heap ordered by
// when each is next due (its next packet out, frame in, RTCP report). A
// worker sleeps until the earliest of them and then runs every session due
// within SchedulerSlack of it, so a thousand calls cost a thousand wake-ups a
// second in all instead of one timer per call firing fifty times a second
// and a goroutine switch per frame. A session's tick reads its sockets
// without blocking before it pops the jitter buffer, so its RTP needs no
// reader goroutine either (see Session).
//
// Workers start with their first session and stop with their last, so an
// idle scheduler holds no goroutine. The zero value is not usable: use
// NewScheduler, or leave SessionOptions.Scheduler nil for the shared one.
type Scheduler struct {
	workers []*schedWorker
	next    atomic.Uint32
}

// SchedulerSlack is how early a worker runs a session that is due soon
// after the one that woke it: packets leave at most this much before their
// slot, and the wake-ups of sessions due within it are shared.
const SchedulerSlack = time.Millisecond

// NewScheduler returns a scheduler with n workers (n <= 0: one per
// GOMAXPROCS).
func NewScheduler(n int) *Scheduler {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	s := &Scheduler{workers: make([]*schedWorker, n)}
	epoch := time.Now()
	for i := range s.workers {
		s.workers[i] = &schedWorker{wake: make(chan struct{}, 1), epoch: epoch}
	}
	return s
}

var (
	sharedOnce  sync.Once
	sharedSched *Scheduler
)

// SharedScheduler is the scheduler of sessions that name none: one worker
// per GOMAXPROCS at its first use.
func SharedScheduler() *Scheduler {
	sharedOnce.Do(func() { sharedSched = NewScheduler(0) })
	return sharedSched
}

// Sessions returns how many sessions the scheduler runs.
func (sc *Scheduler) Sessions() int {
	n := 0
	for _, w := range sc.workers {
		w.mu.Lock()
		n += w.n
		w.mu.Unlock()
	}
	return n
}

// add registers s, due at once, with the next worker.
func (sc *Scheduler) add(s *Session) {
	w := sc.workers[int(sc.next.Add(1))%len(sc.workers)]
	s.worker = w
	w.mu.Lock()
	s.due, s.idx = 0, -1
	heap.Push(&w.h, s)
	w.n++
	if w.stop == nil {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		go w.run(w.stop, w.done)
	}
	w.mu.Unlock()
	w.poke()
}

// schedWorker is one goroutine's share of the sessions.
type schedWorker struct {
	mu   sync.Mutex
	h    schedHeap
	n    int // sessions registered (in the heap or being ticked)
	stop chan struct{}
	done chan struct{}
	wake chan struct{}
	// epoch is the origin of the worker's due times: when its scheduler
	// was made, so that due 0 ("at once") is never in the future, also
	// on a test's synctest clock.
	epoch time.Time

	batch []*Session // run only
}

func (w *schedWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// remove unregisters s and returns once no tick of s runs any more; the
// last session's removal stops the worker and waits for it.
func (w *schedWorker) remove(s *Session) {
	w.mu.Lock()
	s.removed.Store(true)
	if s.idx >= 0 {
		heap.Remove(&w.h, s.idx)
	}
	w.n--
	var done chan struct{}
	if w.n == 0 && w.stop != nil {
		close(w.stop)
		done = w.done
		w.stop, w.done = nil, nil
	}
	w.mu.Unlock()
	s.tickMu.Lock() // a tick in progress ends first
	s.tickMu.Unlock()
	if done != nil {
		<-done
	}
}

// wakeNow makes s due at once (Resume, a ptime change).
func (w *schedWorker) wakeNow(s *Session) {
	w.mu.Lock()
	if s.idx >= 0 {
		s.due = 0
		heap.Fix(&w.h, s.idx)
	} else {
		s.woken = true // being ticked: due again as soon as it is back
	}
	w.mu.Unlock()
	w.poke()
}

func (w *schedWorker) run(stop, done chan struct{}) {
	defer close(done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		default:
		}
		horizon := w.monoNow() + int64(SchedulerSlack)
		w.mu.Lock()
		w.batch = w.batch[:0]
		for len(w.h) > 0 && w.h[0].due <= horizon {
			w.batch = append(w.batch, heap.Pop(&w.h).(*Session))
		}
		w.mu.Unlock()
		for _, s := range w.batch {
			s.tickMu.Lock()
			if !s.removed.Load() {
				// A session due a little later runs now as if it were due.
				s.due = w.mono(s.tick(time.Duration(max(0, s.due-w.monoNow()))))
			}
			s.tickMu.Unlock()
		}
		w.mu.Lock()
		for i, s := range w.batch {
			if !s.removed.Load() {
				if s.woken {
					s.woken, s.due = false, 0
				}
				heap.Push(&w.h, s)
			}
			w.batch[i] = nil
		}
		wait := time.Hour
		if len(w.h) > 0 {
			wait = time.Duration(w.h[0].due - w.monoNow())
		}
		w.mu.Unlock()
		if wait <= SchedulerSlack {
			continue
		}
		timer.Reset(wait)
		select {
		case <-stop:
			return
		case <-w.wake: // Reset discards a stale expiry (Go 1.23 timers)
		case <-timer.C:
		}
	}
}

// schedHeap orders sessions by due time (container/heap); each session
// knows its index for Fix and Remove.
type schedHeap []*Session

func (h schedHeap) Len() int           { return len(h) }
func (h schedHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h schedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *schedHeap) Push(x any) {
	s := x.(*Session)
	s.idx = len(*h)
	*h = append(*h, s)
}

func (h *schedHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.idx = -1
	return s
}

// mono is t as nanoseconds since the worker's epoch (monotonic when t has
// a monotonic reading, as time.Now's do).
func (w *schedWorker) mono(t time.Time) int64 { return int64(t.Sub(w.epoch)) }

func (w *schedWorker) monoNow() int64 { return int64(time.Since(w.epoch)) }
