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
// A Playout holds PCM (NewPlayout) or, for a G.711 passthrough, the code
// words of one codec (NewCodedPlayout). Both take both kinds of write and
// convert at most once, on the way in: a coded queue keeps WriteCoded
// bytes of its codec as they are and encodes PCM written to it (prompts
// rendered locally) on Write. One sample is one element either way, so
// Len, Flush and the milliseconds it reports do not depend on the kind.
type Playout struct {
	mu    sync.Mutex
	pcm   *queue[int16] // nil for a coded queue
	coded *queue[byte]  // nil for a PCM queue
	codec Codec         // the coded queue's codec
	rate  int           // samples per second (8 kHz but for NewPlayoutAt)
	// gen counts the changes of form (recodeTo): a writer converting
	// for the old form drops its piece rather than queue it wrongly.
	gen int
	// onWrite, when set (by the Session owning the queue, before use), is
	// called after each write that queued audio, outside the lock.
	onWrite func()
	// fill plays when the queue runs short (SetFiller: hold audio).
	fill    *filler
	loopBuf []byte  // a coded loop's piece of the frame being read
	loopPCM []int16 // a PCM loop's piece, encoded for the pacer
}

// NewPlayout returns an empty PCM queue.
func NewPlayout() *Playout {
	return &Playout{pcm: newQueue[int16](), rate: ClockRate}
}

// NewPlayoutAt returns an empty PCM queue of audio at rate (a WebRTC leg
// plays its Opus audio at the model's 24 kHz): Len and Flush count time
// at that rate.
func NewPlayoutAt(rate int) *Playout {
	return &Playout{pcm: newQueue[int16](), rate: rate}
}

// NewCodedPlayout returns an empty queue of c's code words (c is PCMU or
// PCMA).
func NewCodedPlayout(c Codec) *Playout {
	return &Playout{coded: newQueue[byte](), codec: c, rate: ClockRate}
}

// Coded reports whether the queue holds code words, and of which codec.
func (q *Playout) Coded() (Codec, bool) {
	fm := q.form()
	return fm.codec, fm.coded
}

// String names the stage: "Playout", or "Playout(PCMU)" for a coded queue.
func (q *Playout) String() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.coded != nil {
		return "Playout(" + q.codec.Name + ")"
	}
	return "Playout"
}

// Write queues pcm (8 kHz) as audio of item itemID; a coded queue encodes
// it now. The samples are copied. Writes for an item that Flush cut are
// dropped, so audio the model still streams for an interrupted response
// does not play.
func (q *Playout) Write(itemID string, pcm []int16) { q.writeAt(itemID, pcm, -1) }

// writeAt is Write of samples converted for the form gen (-1: any).
func (q *Playout) writeAt(itemID string, pcm []int16, gen int) {
	if len(pcm) == 0 {
		return
	}
	if q.onWrite != nil {
		defer q.onWrite()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if gen >= 0 && gen != q.gen {
		return
	}
	if q.coded == nil {
		if q.pcm.admit(itemID) {
			q.pcm.buf = append(q.pcm.buf, pcm...)
			q.pcm.tag(itemID, len(pcm))
		}
		return
	}
	if q.coded.admit(itemID) {
		q.coded.buf = q.codec.EncodeFrame(q.coded.buf, pcm)
		q.coded.tag(itemID, len(pcm))
	}
}

// WriteCoded queues payload, G.711 code words of codec c, as audio of item
// itemID, like Write. A coded queue of c's law keeps the bytes as they are
// (the passthrough); one of the other law transcodes them (Codec.Transcode)
// and a PCM queue decodes them.
func (q *Playout) WriteCoded(itemID string, c Codec, payload []byte) {
	q.writeCodedAt(itemID, c, payload, -1)
}

// writeCodedAt is WriteCoded by a writer that saw the form gen (-1: any).
func (q *Playout) writeCodedAt(itemID string, c Codec, payload []byte, gen int) {
	if len(payload) == 0 {
		return
	}
	if q.onWrite != nil {
		defer q.onWrite()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if gen >= 0 && gen != q.gen {
		return
	}
	if q.coded == nil {
		if q.pcm.admit(itemID) {
			q.pcm.buf = c.DecodeFrame(q.pcm.buf, payload)
			q.pcm.tag(itemID, len(payload))
		}
		return
	}
	if q.coded.admit(itemID) {
		q.coded.buf = q.codec.Transcode(q.coded.buf, c, payload)
		q.coded.tag(itemID, len(payload))
	}
}

// Read appends exactly n samples of PCM to dst: queued audio (decoded from
// a coded queue), padded with silence when the queue runs short. It
// reports whether any queued audio was taken (false means dst got a whole
// frame of silence).
func (q *Playout) Read(dst []int16, n int) ([]int16, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var took int
	if q.coded == nil {
		s := q.pcm.take(n)
		dst, took = append(dst, s...), len(s)
	} else {
		s := q.coded.take(n)
		dst, took = q.codec.DecodeFrame(dst, s), len(s)
	}
	if f := q.fill; f != nil && took < n {
		if f.pcm != nil {
			dst = takeLoop(dst, f.pcm, &f.pos, n-took)
		} else {
			base := len(dst)
			q.loopBuf = takeLoop(q.loopBuf[:0], f.coded, &f.pos, n-took)
			dst = q.codec.DecodeFrame(dst, q.loopBuf)
			took += len(dst) - base
		}
		took = n
	}
	base := len(dst)
	dst = grow(dst, n-took)
	clear(dst[base:])
	return dst, took > 0
}

// ReadCoded appends exactly n samples to dst as code words of c, padded
// with c's silence byte; otherwise it is Read. This is the pacer's read: a
// coded queue of c's law hands its bytes over as they are, one of the
// other law transcodes them (after a codec change) and a PCM queue encodes.
func (q *Playout) ReadCoded(dst []byte, n int, c Codec) ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var took int
	if q.coded == nil {
		s := q.pcm.take(n)
		dst, took = c.EncodeFrame(dst, s), len(s)
	} else {
		s := q.coded.take(n)
		dst, took = c.Transcode(dst, q.codec, s), len(s)
	}
	if f := q.fill; f != nil && took < n {
		if f.coded != nil {
			q.loopBuf = takeLoop(q.loopBuf[:0], f.coded, &f.pos, n-took)
			dst = c.Transcode(dst, q.codec, q.loopBuf)
		} else {
			q.loopPCM = takeLoop(q.loopPCM[:0], f.pcm, &f.pos, n-took)
			dst = c.EncodeFrame(dst, q.loopPCM)
		}
		took = n
	}
	base := len(dst)
	dst = grow(dst, n-took)
	fill(dst[base:], c.SilenceByte())
	return dst, took > 0
}

// release drops the queue's arrays (the session closed): writes that come
// later still work, from a small array.
func (q *Playout) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pcm != nil {
		q.pcm.buf, q.pcm.head, q.pcm.segs = nil, 0, nil
	} else {
		q.coded.buf, q.coded.head, q.coded.segs = nil, 0, nil
	}
}

// Len returns how much audio is queued.
func (q *Playout) Len() time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	if q.coded != nil {
		n = q.coded.len()
	} else {
		n = q.pcm.len()
	}
	return time.Duration(n) * time.Second / time.Duration(q.rate)
}

// Trim drops the oldest queued audio beyond max, so that at most max
// stays queued, and returns how much it dropped: the bound of a source
// that sends audio faster than real time (a flood), which keeps its latest
// audio rather than its oldest. The dropped samples count as taken for
// their items, as if sent.
func (q *Playout) Trim(max time.Duration) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	keep := int(int64(max) * int64(q.rate) / int64(time.Second))
	var n int
	if q.coded != nil {
		if n = q.coded.len() - keep; n > 0 {
			q.coded.take(n)
		}
	} else if n = q.pcm.len() - keep; n > 0 {
		q.pcm.take(n)
	}
	if n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second / time.Duration(q.rate)
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
	if q.coded != nil {
		return q.coded.flush(q.rate)
	}
	return q.pcm.flush(q.rate)
}

// queue is the item-tagged sample queue behind a Playout, of PCM samples
// or of G.711 code words (one per sample either way). The Playout's mutex
// guards it.
type queue[T int16 | byte] struct {
	buf  []T // queued samples are buf[head:]
	head int
	marks
}

// marks are a queue's items, whatever its samples' form.
type marks struct {
	segs      []segment // item runs covering the queued samples, in order
	cur       string    // item of the most recently sent audio
	curPlayed int       // samples of cur sent so far
	flushed   []string  // items cut by flush: their late writes are dropped
}

type segment struct {
	id string
	n  int
}

// queueStart is the capacity a queue starts with, and goes back to after
// a burst: a quarter of a second at 8 kHz holds what a paced provider
// keeps ahead (a few frames), and a burst (a greeting queued at once, a
// provider faster than real time) grows it for as long as it lasts.
const queueStart = ClockRate / 4

func newQueue[T int16 | byte]() *queue[T] {
	return &queue[T]{buf: make([]T, 0, queueStart)}
}

// admit reports whether audio of itemID may be queued (its item was not
// cut by a flush) and, if so, makes room: the caller appends the samples
// to buf and calls tag.
func (q *queue[T]) admit(itemID string) bool {
	for _, f := range q.flushed {
		if f == itemID {
			return false
		}
	}
	q.flushed = q.flushed[:0]
	if q.buf == nil {
		q.buf = make([]T, 0, queueStart)
	}
	if q.head > 0 && q.head >= len(q.buf)/2 { // compact instead of growing forever
		n := copy(q.buf, q.buf[q.head:])
		q.buf = q.buf[:n]
		q.head = 0
	}
	return true
}

// tag records that the n samples just appended belong to itemID.
func (q *queue[T]) tag(itemID string, n int) {
	if k := len(q.segs); k > 0 && q.segs[k-1].id == itemID {
		q.segs[k-1].n += n
	} else {
		q.segs = append(q.segs, segment{id: itemID, n: n})
	}
}

// take removes up to n samples from the head of the queue, credits them to
// their items and returns them; the slice is valid until the next write.
func (q *queue[T]) take(n int) []T {
	k := min(n, len(q.buf)-q.head)
	out := q.buf[q.head : q.head+k]
	q.head += k
	for left := k; left > 0; {
		s := &q.segs[0]
		if s.id != q.cur {
			q.cur, q.curPlayed = s.id, 0
		}
		m := min(left, s.n)
		s.n -= m
		q.curPlayed += m
		left -= m
		if s.n == 0 { // shift rather than reslice, so capacity is reused
			q.segs = q.segs[:copy(q.segs, q.segs[1:])]
		}
	}
	if q.head == len(q.buf) {
		q.empty()
	}
	return out
}

// empty empties the queue. An array grown by a burst (a greeting queued
// at once) is let go at once, not at the next write, which may be long in
// coming (a caller who talks on): out, which take returned, stays valid.
func (q *queue[T]) empty() {
	q.buf, q.head = q.buf[:0], 0
	q.segs = q.segs[:0]
	if cap(q.buf) > 2*queueStart {
		q.buf = nil // the next write starts a small one
	}
}

// len returns the number of queued samples.
func (q *queue[T]) len() int { return len(q.buf) - q.head }

func (q *queue[T]) flush(rate int) (itemID string, playedMs int) {
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
	q.empty()
	return itemID, played * 1000 / rate
}
