package webhook

import (
	"fmt"
	"time"
)

// asyncJob is one queued DeliverAsync call.
type asyncJob struct {
	target Target
	event  Event
	done   func(Result, error)
}

// DeliverAsync queues ev for delivery by a worker and returns at once; it
// never blocks. It is meant for lifecycle events, which the call does not
// wait for. When the queue is full the event is dropped (logged at warn)
// and ErrQueueFull returned; after Close it returns ErrClosed. For an
// accepted event, done (optional) is called exactly once from a worker
// with Deliver's result; the delivery is bounded by Options.MaxElapsed and
// cancelled by Close after Options.CloseTimeout.
func (d *Dispatcher) DeliverAsync(t Target, ev Event, done func(Result, error)) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed.Load() {
		return ErrClosed
	}
	select {
	case d.queue <- asyncJob{target: t, event: ev, done: done}:
		return nil
	default:
		d.log.Warn().
			Str("event_id", ev.ID).
			Str("event_type", ev.Type).
			Int("queue_size", cap(d.queue)).
			Msg("webhook queue full, event dropped")
		return ErrQueueFull
	}
}

// worker serves the async queue until Close closes it.
func (d *Dispatcher) worker() {
	defer d.wg.Done()
	for j := range d.queue {
		res, err := d.deliverQueued(j)
		if err != nil {
			d.log.Warn().
				Str("event_id", j.event.ID).
				Str("event_type", j.event.Type).
				Int("attempts", len(res.Attempts)).
				Err(err).
				Msg("webhook event not delivered")
		}
		if j.done != nil {
			j.done(res, err)
		}
	}
}

// deliverQueued runs Deliver for a queued job under the dispatcher's own
// context (Close cancels it), bypassing the closed check so that events
// accepted before Close are still attempted.
func (d *Dispatcher) deliverQueued(j asyncJob) (Result, error) {
	return d.deliver(d.base, j.target, j.event)
}

// Close stops accepting async events, lets queued and in-flight async
// deliveries finish for up to Options.CloseTimeout, then cancels the rest
// (their done callbacks still run) and waits for the workers to exit. It
// closes the idle connections of the Dispatcher's own transport. Deliver
// calls in progress are the caller's and are not waited for. Close is
// idempotent; it returns an error when it had to cancel deliveries.
func (d *Dispatcher) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed.Store(true)
		close(d.queue)
		d.mu.Unlock()

		finished := make(chan struct{})
		go func() {
			d.wg.Wait()
			close(finished)
		}()
		timer := time.NewTimer(d.opts.CloseTimeout)
		defer timer.Stop()
		select {
		case <-finished:
		case <-timer.C:
			d.cancel()
			<-finished
			d.closeErr = fmt.Errorf("webhook: close: async deliveries cancelled after %s", d.opts.CloseTimeout)
		}
		d.cancel()
		if d.ownTransport != nil {
			d.ownTransport.CloseIdleConnections()
		}
	})
	return d.closeErr
}
