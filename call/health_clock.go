package call

import (
	"sync"
	"time"
)

// monitorClock ticks the health monitors of a Manager's calls from one
// goroutine every Health.Interval: one ticker for all calls instead of a
// ticker and a goroutine per call. It runs only while it has monitors.
type monitorClock struct {
	interval time.Duration

	mu   sync.Mutex // guards set and the goroutine's start and stop
	set  map[*monitor]struct{}
	stop chan struct{}
	done chan struct{}

	tickMu sync.Mutex // held while a round of ticks runs
	batch  []*monitor // run only
}

func newMonitorClock(interval time.Duration) *monitorClock {
	return &monitorClock{interval: interval, set: map[*monitor]struct{}{}}
}

// add ticks m from the next round on.
func (k *monitorClock) add(m *monitor) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.set[m] = struct{}{}
	if k.stop == nil {
		k.stop, k.done = make(chan struct{}), make(chan struct{})
		go k.run(k.stop, k.done)
	}
}

// remove stops ticking m and returns once no tick of m runs; the last
// monitor's removal stops the goroutine and waits for it.
func (k *monitorClock) remove(m *monitor) {
	k.mu.Lock()
	delete(k.set, m)
	var done chan struct{}
	if len(k.set) == 0 && k.stop != nil {
		close(k.stop)
		done = k.done
		k.stop, k.done = nil, nil
	}
	k.mu.Unlock()
	k.tickMu.Lock() // a round in progress ends first
	k.tickMu.Unlock()
	if done != nil {
		<-done
	}
}

func (k *monitorClock) run(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(k.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		k.tickMu.Lock()
		k.mu.Lock()
		k.batch = k.batch[:0]
		for m := range k.set {
			k.batch = append(k.batch, m)
		}
		k.mu.Unlock()
		for i, m := range k.batch {
			m.tick()
			k.batch[i] = nil
		}
		k.tickMu.Unlock()
	}
}
