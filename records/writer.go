package records

import (
	"context"
	"time"

	"switchboard/store"
)

// The writer. Call records change at a call's admission, answer, transfer
// and end: at a thousand call setups a second that is thousands of upserts
// a second, and one transaction each (a commit, a connection, a statement
// parsed) cost more CPU than the calls. So the records are written by one
// writer at a time, in batches:
//
//   - a change queues its call in the next batch (once: a call changed
//     twice before its batch is written is written once, in its latest
//     state, which the writer reads when it writes the batch);
//   - a writer goroutine, started when a batch is queued and none runs,
//     writes the batch in one transaction (store.CallStore.PutAll, one
//     prepared upsert), then the batch queued meanwhile, and stops when
//     none is queued.
//
// Commits are paced: a batch starts at least BatchInterval after the
// previous one started, so a busy recorder commits at most once per
// interval (each commit writes the pages it touched to the WAL: on SQLite
// that, not the rows, was most of a write's cost), while a change that
// comes after a quiet interval is written at once. A record therefore
// waits at most BatchInterval plus the transaction in progress before its
// own transaction starts. Admitted and Ended wait for their batch's
// commit, bounded by the Timeout: the durability contract (a call's record
// is stored before it rings, its final record when it ends) holds as it
// did with one write per change.

// batch is the calls written in one transaction; done is closed when it
// is committed (or failed).
type batch struct {
	entries []*entry
	done    chan struct{}
}

// queueLocked puts e in the next batch, once, starts the writer when none
// runs, and returns the batch. It runs with r.mu held.
func (r *Recorder) queueLocked(e *entry) *batch {
	if r.next == nil {
		r.next = &batch{done: make(chan struct{})}
	}
	b := r.next
	if !e.queued {
		e.queued, e.retry = true, false
		b.entries = append(b.entries, e)
	}
	if !r.writing {
		r.writing = true
		go r.drain()
	}
	return b
}

// wait waits until b is written or ctx ends; a call whose record is not
// stored in time goes on (the writer still writes it), with a warning.
func (r *Recorder) wait(ctx context.Context, e *entry, b *batch) {
	select {
	case <-b.done:
	case <-ctx.Done():
		l := e.c.Logger()
		l.Warn().Dur("waited", r.opts.Timeout).Msg("call record: not stored in time; the call goes on and its record is written when the store answers")
	}
}

// drain writes the batches until none is queued.
func (r *Recorder) drain() {
	for {
		if d := r.opts.BatchInterval - time.Since(r.lastBatch); d > 0 {
			time.Sleep(d) // the writer is the one goroutine that waits
		}
		r.lastBatch = time.Now()
		r.mu.Lock()
		b := r.next
		r.next = nil
		if b == nil {
			r.writing = false
			r.idle.Broadcast()
			r.mu.Unlock()
			return
		}
		final := make([]bool, len(b.entries))
		for i, e := range b.entries {
			e.queued, final[i] = false, e.ended
		}
		r.mu.Unlock()
		r.write(b, final)
		close(b.done)
	}
}

// write stores the batch's calls, each in its current state, in one
// transaction. When that fails and the batch holds several calls, each is
// tried alone in the time left, so that one bad record cannot hold back
// the others. final[i] says the write of b.entries[i] is its call's final
// record.
func (r *Recorder) write(b *batch, final []bool) {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	start := r.opts.Now()
	errs := make([]error, len(b.entries))
	recs := make([]*store.Call, 0, len(b.entries))
	idx := make([]int, 0, len(b.entries)) // recs[k] is b.entries[idx[k]]
	for i, e := range b.entries {
		sc, err := toStore(e.c.Snapshot(), e.team)
		if err != nil {
			errs[i] = err
			continue
		}
		sc.AliveTime, sc.NodeID = start, r.opts.NodeID
		recs, idx = append(recs, sc), append(idx, i)
	}
	if err := r.st.Calls().PutAll(ctx, recs); err != nil {
		for k, sc := range recs {
			if len(recs) > 1 {
				err = r.st.Calls().Put(ctx, sc)
			}
			errs[idx[k]] = err
		}
	}
	took := r.opts.Now().Sub(start)
	r.opts.Metrics.batch(len(recs), took)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range b.entries {
		ok := errs[i] == nil
		r.opts.Metrics.written(ok)
		if ok {
			e.stored = true
		} else {
			l := e.c.Logger()
			l.Error().Err(errs[i]).Dur("elapsed", took).Int("batch", len(recs)).Bool("final", final[i]).Msg("call record not stored")
		}
		switch {
		case final[i]:
			r.endWithLocked(ok, e)
			e.retry = !ok && r.calls[e.c.ID()] == e && !e.queued
		case !ok && !e.queued:
			e.retry = true
		}
	}
}
