package recording

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/media"
)

// Recording geometry: 8 kHz stereo 16-bit, one sealed chunk a second.
const (
	rate      = media.ClockRate
	channels  = 2
	chunkSize = rate * channels * 2
	// maxFrame is the longest frame a tap copies (60 ms at 8 kHz).
	maxFrame = 480
	// queueLen frames (both directions) may wait for the writer: about
	// 2.5 s at 20 ms.
	queueLen = 256
	// holdBack is how far behind the newest frame the writer stays under
	// the redact policy, so a redacted key (seen up to ~200 ms after its
	// tone began) is silenced before its audio is written.
	holdBack = 600 * time.Millisecond
	// maxLag is how far one channel may lag the other before the writer
	// fills it with silence (a caller whose RTP stopped).
	maxLag = time.Second
	// maxGap bounds the silence one late frame can ask for (a clock jump
	// must not allocate minutes of samples).
	maxGap = 10 * time.Second
	// flushEvery is how often the file is written and its header updated.
	flushEvery = time.Second
)

// Frame kinds in the queue.
const (
	kindPCM uint8 = iota
	kindPCMU
	kindPCMA
	kindSilence
)

// qframe is one frame copied by a tap: fixed size, so the queue never
// allocates.
type qframe struct {
	at    time.Time
	right bool
	kind  uint8
	n     uint16
	data  [2 * maxFrame]byte
}

// sink is where the writer puts interleaved PCM: a plain WAV or a sealed
// file.
type sink interface {
	Write(p []byte) error
	Checkpoint() error
	Close() error
	Bytes() int64
}

// Recording is one call's recording while it is written (a call.Recording).
type Recording struct {
	svc    *Service
	id     string
	phone  call.Phone
	log    zerolog.Logger
	path   string
	file   *os.File
	out    sink
	q      chan qframe
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	drops  atomic.Uint64
	closed atomic.Bool
	redact bool // hold audio back for Redact

	mu      sync.Mutex
	redacts [][2]time.Time

	// writer goroutine only
	t0      time.Time
	base    int64 // sample index of pend[x][0]
	pend    [2][]int16
	scratch []byte
	err     error
}

var _ call.Recording = (*Recording)(nil)

// Inbound copies the caller's frame into the queue (media.Tap).
func (r *Recording) Inbound(f media.Frame) { r.push(f, false) }

// Outbound copies the frame the caller heard into the queue (media.Tap).
func (r *Recording) Outbound(f media.Frame) { r.push(f, true) }

func (r *Recording) push(f media.Frame, right bool) {
	if r.closed.Load() {
		return
	}
	var q qframe
	q.at, q.right = f.At, right
	switch {
	case f.Event || (f.PCM == nil && f.Coded == nil):
		q.kind, q.n = kindSilence, uint16(min(f.Samples, maxFrame))
	case f.PCM != nil:
		pcm := f.PCM[:min(len(f.PCM), maxFrame)]
		q.kind, q.n = kindPCM, uint16(len(pcm))
		media.AppendPCM16LE(q.data[:0], pcm)
	default:
		q.kind = kindPCMA
		if f.Codec.Name == media.PCMU.Name {
			q.kind = kindPCMU
		}
		q.n = uint16(copy(q.data[:maxFrame], f.Coded))
	}
	select {
	case r.q <- q:
	default:
		r.drops.Add(1)
		r.svc.metrics.dropped.Inc()
	}
}

// Redact keeps both channels silent over [from, to) (call.Recording).
func (r *Recording) Redact(from, to time.Time) {
	r.mu.Lock()
	r.redacts = append(r.redacts, [2]time.Time{from, to})
	r.mu.Unlock()
}

// Close stops the taps, writes what is left and finishes the file.
func (r *Recording) Close() error {
	r.once.Do(func() {
		r.closed.Store(true)
		close(r.stop)
	})
	<-r.done
	return r.err
}

// run is the writer goroutine.
func (r *Recording) run() {
	defer close(r.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case q := <-r.q:
			r.place(&q)
		case <-t.C:
			r.flush(false)
		case <-r.stop:
			for {
				select {
				case q := <-r.q:
					r.place(&q)
					continue
				default:
				}
				break
			}
			r.flush(true)
			r.finish()
			return
		}
	}
}

// sampleAt is the sample index of t on the recording's clock.
func (r *Recording) sampleAt(t time.Time) int64 {
	return int64(t.Sub(r.t0)) * rate / int64(time.Second)
}

// place puts a frame on its channel at its time.
func (r *Recording) place(q *qframe) {
	if r.t0.IsZero() {
		r.t0 = q.at
	}
	ch := 0
	if q.right {
		ch = 1
	}
	idx := r.sampleAt(q.at)
	end := r.base + int64(len(r.pend[ch]))
	if idx+int64(q.n) <= r.base {
		return // before what is already written
	}
	if gap := idx - end; gap > 0 {
		gap = min(gap, int64(maxGap/time.Second)*rate)
		r.pend[ch] = append(r.pend[ch], make([]int16, gap)...)
	}
	n := int(q.n)
	switch q.kind {
	case kindSilence:
		r.pend[ch] = append(r.pend[ch], make([]int16, n)...)
	case kindPCM:
		r.pend[ch] = media.DecodePCM16LE(r.pend[ch], q.data[:2*n])
	case kindPCMU:
		r.pend[ch] = media.PCMU.DecodeFrame(r.pend[ch], q.data[:n])
	case kindPCMA:
		r.pend[ch] = media.PCMA.DecodeFrame(r.pend[ch], q.data[:n])
	}
}

// flush writes the samples both channels have (or that one channel has
// while the other lags more than maxLag), but the last holdBack unless
// final, applying the redactions.
func (r *Recording) flush(final bool) {
	if r.err != nil {
		return
	}
	l, rr := int64(len(r.pend[0])), int64(len(r.pend[1]))
	longest := max(l, rr)
	c := min(l, rr)
	if lag := int64(maxLag/time.Millisecond) * rate / 1000; c < longest-lag {
		c = longest - lag
	}
	switch {
	case final:
		c = longest
	case r.redact:
		c = min(c, longest-int64(holdBack/time.Millisecond)*rate/1000)
	}
	if c > 0 {
		for ch := range r.pend {
			if k := c - int64(len(r.pend[ch])); k > 0 {
				r.pend[ch] = append(r.pend[ch], make([]int16, k)...)
			}
		}
		r.applyRedactions(c)
		r.scratch = slices.Grow(r.scratch[:0], int(4*c))[:4*c]
		for i := range c {
			binary.LittleEndian.PutUint16(r.scratch[4*i:], uint16(r.pend[0][i]))
			binary.LittleEndian.PutUint16(r.scratch[4*i+2:], uint16(r.pend[1][i]))
		}
		if err := r.out.Write(r.scratch); err != nil {
			r.fail(err)
			return
		}
		for ch := range r.pend {
			r.pend[ch] = r.pend[ch][:copy(r.pend[ch], r.pend[ch][c:])]
		}
		r.base += c
	}
	if err := r.out.Checkpoint(); err != nil {
		r.fail(err)
	}
}

// applyRedactions silences the first c pending samples of both channels
// where a redaction covers them, and forgets the redactions passed.
func (r *Recording) applyRedactions(c int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := r.redacts[:0]
	for _, w := range r.redacts {
		from, to := max(r.sampleAt(w[0])-r.base, 0), min(r.sampleAt(w[1])-r.base, c)
		for ch := range r.pend {
			if from < to {
				clear(r.pend[ch][from:to])
			}
		}
		if r.sampleAt(w[1]) > r.base+c {
			keep = append(keep, w)
		}
	}
	r.redacts = keep
}

func (r *Recording) fail(err error) {
	r.err = err
	r.log.Error().Err(err).Str("path", r.path).Msg("recording write failed: the rest of the call is not recorded")
}

// finish closes the file and reports the recording.
func (r *Recording) finish() {
	if err := r.out.Close(); err != nil && r.err == nil {
		r.fail(err)
	}
	if err := r.file.Close(); err != nil && r.err == nil {
		r.fail(err)
	}
	r.svc.finished(r)
}

// Duration is how long the written audio lasts.
func (r *Recording) Duration() time.Duration {
	return time.Duration(r.out.Bytes()/(2*channels)) * time.Second / rate
}

var errExists = errors.New("recording: a recording of this call exists")
