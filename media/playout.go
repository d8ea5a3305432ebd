package media

import (
	"sync"
	"time"
)

// Playout is the outbound queue of 8 kHz PCM waiting for the pacer. Each
// write is tagged with the id of the conversation item it belongs to, so a
// barge-in Flush can say how much of the current item the caller actually
// heard. Writes come from the model goroutine and reads from the pacer, so
// Playout is safe for concurrent use.
type Playout struct {
	mu        sync.Mutex
	buf       []int16 // queued samples are buf[head:]
	head      int
	segs      []segment // item runs covering buf[head:], in order
	cur       string    // item of the most recently sent audio
	curPlayed int       // samples of cur sent so far
	flushed   []string  // items cut by Flush: their late writes are dropped
}

type segment struct {
	id string
	n  int
}

// NewPlayout returns an empty queue.
func NewPlayout() *Playout {
	return &Playout{buf: make([]int16, 0, ClockRate)}
}

// Write queues pcm (8 kHz) as audio of item itemID. The samples are
// copied. Writes for an item that Flush cut are dropped, so audio the model
// still streams for an interrupted response does not play.
func (q *Playout) Write(itemID string, pcm []int16) {
	if len(pcm) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.flushed {
		if f == itemID {
			return
		}
	}
	q.flushed = q.flushed[:0]
	if q.head > 0 && q.head >= len(q.buf)/2 { // compact instead of growing forever
		n := copy(q.buf, q.buf[q.head:])
		q.buf = q.buf[:n]
		q.head = 0
	}
	q.buf = append(q.buf, pcm...)
	if k := len(q.segs); k > 0 && q.segs[k-1].id == itemID {
		q.segs[k-1].n += len(pcm)
	} else {
		q.segs = append(q.segs, segment{id: itemID, n: len(pcm)})
	}
}

// Read appends exactly n samples to dst: queued audio, padded with
// silence when the queue runs short. It reports whether any queued audio
// was taken (false means dst got a whole frame of silence).
func (q *Playout) Read(dst []int16, n int) ([]int16, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	take := min(n, len(q.buf)-q.head)
	dst = append(dst, q.buf[q.head:q.head+take]...)
	q.head += take
	for left := take; left > 0; {
		s := &q.segs[0]
		if s.id != q.cur {
			q.cur, q.curPlayed = s.id, 0
		}
		k := min(left, s.n)
		s.n -= k
		q.curPlayed += k
		left -= k
		if s.n == 0 { // shift rather than reslice, so capacity is reused
			q.segs = q.segs[:copy(q.segs, q.segs[1:])]
		}
	}
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
		q.segs = q.segs[:0]
	}
	base := len(dst)
	dst = grow(dst, n-take)
	clear(dst[base:])
	return dst, take > 0
}

// Len returns how much audio is queued.
func (q *Playout) Len() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	return time.Duration(len(q.buf)-q.head) * time.Second / ClockRate
}

// Flush drops everything queued; the pacer sends silence from its next
// frame on, so the cut takes effect within one ptime. It returns the item
// that was being played and how many milliseconds of it were sent: the
// value for conversation.item.truncate's audio_end_ms. When the current
// item had finished and the next one had not started, that next item is
// returned with 0 ms; with nothing ever played it returns "" and 0.
func (q *Playout) Flush() (itemID string, playedMs int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	itemID, played := q.cur, q.curPlayed
	if len(q.segs) > 0 && q.segs[0].id != q.cur {
		itemID, played = q.segs[0].id, 0
	}
	q.flushed = q.flushed[:0]
	if itemID != "" {
		q.flushed = append(q.flushed, itemID)
	}
	for _, s := range q.segs {
		if s.id != itemID {
			q.flushed = append(q.flushed, s.id)
		}
	}
	q.buf, q.head = q.buf[:0], 0
	q.segs = q.segs[:0]
	return itemID, played * 1000 / ClockRate
}
