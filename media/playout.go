package media

import (
	"sync"
	"time"
)

// Playout is the outbound queue of 8 kHz audio waiting for the pacer. Each
// write is tagged with the id of the conversation item it belongs to, so a
// barge-in Flush can say how much of the current item the caller actually
// heard. Writes come from the model goroutine and reads from the pacer, so
// Playout is safe for concurrent use.
//
// A Playout holds PCM (NewPlayout), or, for a G.711 passthrough, the
// codec's bytes (NewCodedPlayout): then coded writes are queued as they
// are and the pacer sends them without decoding or encoding; PCM written
// to it (prompts rendered locally) is encoded once, on Write.
type Playout struct {
	pcm   *queue[int16] // nil in coded mode
	coded *queue[byte]  // nil in PCM mode
	codec Codec         // coded mode: the queued bytes' codec

	mu      sync.Mutex // guards the scratch buffers
	scratch []byte
	dec     []int16
}

// NewPlayout returns an empty PCM queue.
func NewPlayout() *Playout {
	return &Playout{pcm: newQueue[int16]()}
}

// NewCodedPlayout returns an empty queue of codec c's bytes.
func NewCodedPlayout(c Codec) *Playout {
	return &Playout{coded: newQueue[byte](), codec: c}
}

// Coded reports whether the queue holds codec bytes, and which codec.
func (q *Playout) Coded() (Codec, bool) { return q.codec, q.coded != nil }

// Write queues pcm (8 kHz) as audio of item itemID. The samples are
// copied. Writes for an item that Flush cut are dropped, so audio the model
// still streams for an interrupted response does not play.
func (q *Playout) Write(itemID string, pcm []int16) {
	if q.coded == nil {
		q.pcm.write(itemID, pcm)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.scratch = q.codec.EncodeFrame(q.scratch[:0], pcm)
	q.coded.write(itemID, q.scratch)
}

// WriteCoded queues G.711 bytes of the queue's codec (passthrough) as
// audio of item itemID; on a PCM queue they are decoded as PCMU or PCMA
// per c.
func (q *Playout) WriteCoded(itemID string, c Codec, payload []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.coded != nil {
		if c.PayloadType != q.codec.PayloadType {
			payload = q.codec.Transcode(q.scratch[:0], c, payload)
			q.scratch = payload
		}
		q.coded.write(itemID, payload)
		return
	}
	q.dec = c.DecodeFrame(q.dec[:0], payload)
	q.pcm.write(itemID, q.dec)
}

// Read appends exactly n samples of PCM to dst: queued audio, padded with
// silence when the queue runs short. It reports whether any queued audio
// was taken (false means dst got a whole frame of silence). On a coded
// queue it returns silence: use ReadCoded.
func (q *Playout) Read(dst []int16, n int) ([]int16, bool) {
	if q.pcm == nil {
		base := len(dst)
		dst = grow(dst, n)
		clear(dst[base:])
		return dst, false
	}
	return q.pcm.read(dst, n, 0)
}

// ReadCoded appends exactly n bytes of the codec to dst, padded with the
// codec's silence; see Read.
func (q *Playout) ReadCoded(dst []byte, n int) ([]byte, bool) {
	if q.coded == nil {
		base := len(dst)
		dst = grow(dst, n)
		for i := base; i < len(dst); i++ {
			dst[i] = PCMU.SilenceByte()
		}
		return dst, false
	}
	return q.coded.read(dst, n, q.codec.SilenceByte())
}

// Len returns how much audio is queued.
func (q *Playout) Len() time.Duration {
	if q.coded != nil {
		return q.coded.len()
	}
	return q.pcm.len()
}

// Flush drops everything queued; the pacer sends silence from its next
// frame on, so the cut takes effect within one ptime. It returns the item
// that was being played and how many milliseconds of it were sent: the
// value for conversation.item.truncate's audio_end_ms. When the current
// item had finished and the next one had not started, that next item is
// returned with 0 ms; with nothing ever played it returns "" and 0.
func (q *Playout) Flush() (itemID string, playedMs int) {
	if q.coded != nil {
		return q.coded.flush()
	}
	return q.pcm.flush()
}

// queue is the item-tagged sample queue behind a Playout, of PCM samples
// or of G.711 bytes (one per sample either way).
type queue[T int16 | byte] struct {
	mu        sync.Mutex
	buf       []T // queued samples are buf[head:]
	head      int
	segs      []segment // item runs covering buf[head:], in order
	cur       string    // item of the most recently sent audio
	curPlayed int       // samples of cur sent so far
	flushed   []string  // items cut by flush: their late writes are dropped
}

type segment struct {
	id string
	n  int
}

func newQueue[T int16 | byte]() *queue[T] {
	return &queue[T]{buf: make([]T, 0, ClockRate)}
}

func (q *queue[T]) write(itemID string, samples []T) {
	if len(samples) == 0 {
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
	q.buf = append(q.buf, samples...)
	if k := len(q.segs); k > 0 && q.segs[k-1].id == itemID {
		q.segs[k-1].n += len(samples)
	} else {
		q.segs = append(q.segs, segment{id: itemID, n: len(samples)})
	}
}

func (q *queue[T]) read(dst []T, n int, silence T) ([]T, bool) {
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
	for i := base; i < len(dst); i++ {
		dst[i] = silence
	}
	return dst, take > 0
}

func (q *queue[T]) len() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	return time.Duration(len(q.buf)-q.head) * time.Second / ClockRate
}

func (q *queue[T]) flush() (itemID string, playedMs int) {
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
