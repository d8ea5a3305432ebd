// Package sendq is the ordered outbound queue of a realtime session: control
// events and audio frames keep their order, audio never blocks the producer
// (when the audio budget is full the oldest queued frame is dropped and
// counted), and control events wait for room instead of being dropped.
package sendq

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Push after Close.
var ErrClosed = errors.New("queue closed")

type entry[T any] struct {
	v     T
	audio bool
}

// Queue is a FIFO of T with a separate budget for audio entries. It is safe
// for concurrent use; one consumer drains it.
type Queue[T any] struct {
	mu       sync.Mutex
	items    []entry[T]
	audioN   int
	otherN   int
	maxAudio int
	maxOther int
	closed   bool
	wake     chan struct{}
	room     chan struct{}
	dropped  atomic.Uint64
}

// New returns a queue holding at most maxAudio audio entries and maxOther
// other entries.
func New[T any](maxAudio, maxOther int) *Queue[T] {
	return &Queue[T]{
		maxAudio: max(1, maxAudio),
		maxOther: max(1, maxOther),
		wake:     make(chan struct{}, 1),
		room:     make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// PushAudio queues an audio entry without blocking. When the audio budget is
// full it drops the oldest queued audio entry and reports true. After Close it
// drops v and reports true.
func (q *Queue[T]) PushAudio(v T) (dropped bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.dropped.Add(1)
		return true
	}
	if q.audioN >= q.maxAudio {
		for i := range q.items {
			if q.items[i].audio {
				q.items = append(q.items[:i], q.items[i+1:]...)
				q.audioN--
				dropped = true
				q.dropped.Add(1)
				break
			}
		}
	}
	q.items = append(q.items, entry[T]{v: v, audio: true})
	q.audioN++
	q.mu.Unlock()
	signal(q.wake)
	return dropped
}

// Push queues a non-audio entry, waiting for room while the budget is full.
func (q *Queue[T]) Push(ctx context.Context, v T) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return ErrClosed
		}
		if q.otherN < q.maxOther {
			q.items = append(q.items, entry[T]{v: v})
			q.otherN++
			q.mu.Unlock()
			signal(q.wake)
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Ready is signalled after a push; the consumer then calls Drain.
func (q *Queue[T]) Ready() <-chan struct{} { return q.wake }

// Drain appends every queued entry to dst in order and empties the queue.
func (q *Queue[T]) Drain(dst []T) []T {
	q.mu.Lock()
	for _, e := range q.items {
		dst = append(dst, e.v)
	}
	clear(q.items)
	q.items = q.items[:0]
	q.audioN, q.otherN = 0, 0
	q.mu.Unlock()
	signal(q.room)
	return dst
}

// Len returns the number of queued entries.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Dropped returns how many audio entries were dropped so far.
func (q *Queue[T]) Dropped() uint64 { return q.dropped.Load() }

// Close makes later pushes fail (Push) or drop (PushAudio) and wakes waiters.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.room)
	signal(q.wake)
}
