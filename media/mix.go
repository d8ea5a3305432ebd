package media

import "sync"

// Mixer is a Tap that mixes the two directions of a session into one
// stream: the party's voice (Inbound) and what the party hears (Outbound),
// summed with saturation and handed to its sink as 8 kHz PCM, 20 ms at a
// time. It is what a supervisor listening to a call hears: the caller and,
// in the same stream, whoever the caller hears (the model, a bridged
// human, hold audio).
//
// A tap's frames are 8 kHz already (G.711 code words, decoded here by
// table, or PCM; a wideband session's RateTap converts), so the mixer
// neither resamples nor allocates: each direction waits in a fixed queue
// until the other has its frame. The two come from the same session tick,
// so they pair up at once; when one direction stops (the caller's phone
// holds the call, the pacer is held) the other goes on alone once it has
// queued mixLag, and a direction that runs ahead loses its oldest audio
// beyond mixMax, so the mix never builds up a delay.
type Mixer struct {
	sink func(pcm []int16)

	mu      sync.Mutex
	in, out mixQueue
	frame   [mixFrame]int16
}

var _ Tap = (*Mixer)(nil)

const (
	// mixFrame is what the sink gets at a time: 20 ms at 8 kHz.
	mixFrame = ClockRate / 50
	// mixLag is how much one direction queues before it is mixed alone:
	// three frames, well past the one tick that separates the two
	// directions of a session.
	mixLag = 3 * mixFrame
	// mixQueue bounds each direction's queue (100 ms).
	mixMax = 5 * mixFrame
)

// mixQueue is one direction's samples waiting for the other's.
type mixQueue struct {
	buf [mixMax]int16
	n   int
}

// NewMixer returns a mixer that hands each 20 ms of the mix to sink, on
// the goroutine that feeds the tap (the session's media goroutine). sink
// must not block or keep the slice.
func NewMixer(sink func(pcm []int16)) *Mixer { return &Mixer{sink: sink} }

// Inbound takes a frame of the party's voice (Tap).
func (m *Mixer) Inbound(f Frame) { m.take(&m.in, f) }

// Outbound takes a frame the party heard (Tap).
func (m *Mixer) Outbound(f Frame) { m.take(&m.out, f) }

func (m *Mixer) take(q *mixQueue, f Frame) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q.push(f)
	m.emit()
}

// push appends f's audio: its PCM, its G.711 code words decoded, or
// silence of its length (nothing sent while held, a telephone-event in
// the audio's slot, a code the tap cannot read).
func (q *mixQueue) push(f Frame) {
	n := f.Samples
	switch {
	case f.Event:
	case f.PCM != nil:
		n = len(f.PCM)
	case f.Coded != nil && f.Codec.IsG711():
		n = len(f.Coded)
	}
	if n <= 0 {
		return
	}
	skip := 0 // what does not fit even in an empty queue: its start goes
	if n > len(q.buf) {
		skip, n = n-len(q.buf), len(q.buf)
	}
	if drop := q.n + n - len(q.buf); drop > 0 {
		q.pop(drop)
	}
	dst := q.buf[q.n : q.n+n]
	switch {
	case f.Event:
		clear(dst)
	case f.PCM != nil:
		copy(dst, f.PCM[skip:])
	case f.Coded != nil && f.Codec.IsG711():
		f.Codec.DecodeFrame(dst[:0], f.Coded[skip:])
	default:
		clear(dst)
	}
	q.n += n
}

// pop drops the queue's first k samples.
func (q *mixQueue) pop(k int) {
	k = min(k, q.n)
	copy(q.buf[:], q.buf[k:q.n])
	q.n -= k
}

// emit hands on every frame the two queues make: both directions when
// each has a frame, one alone once it waited mixLag for the other (which
// gives what it has).
func (m *Mixer) emit() {
	for {
		a, b := &m.in, &m.out
		if a.n < mixFrame || (b.n >= mixFrame && b.n > a.n) {
			a, b = b, a // a: the queue with a frame (the fuller one)
		}
		if a.n < mixFrame || (b.n < mixFrame && a.n < mixLag) {
			return
		}
		k := min(b.n, mixFrame)
		f, x, y := m.frame[:], a.buf[:mixFrame], b.buf[:k]
		for i, v := range y {
			f[i] = int16(max(-32768, min(32767, int32(x[i])+int32(v))))
		}
		copy(f[k:], x[k:])
		a.pop(mixFrame)
		b.pop(k)
		m.sink(m.frame[:])
	}
}
