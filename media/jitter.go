package media

import (
	"fmt"
	"time"

	"github.com/pion/rtp"
)

// PushResult says what JitterBuffer.Push did with a packet.
type PushResult int

// Results of JitterBuffer.Push.
const (
	// PushAccepted means the packet's audio was stored for playout.
	PushAccepted PushResult = iota
	// PushSSRCChange means the packet started a new stream (a new SSRC
	// after an earlier one); the buffer was reset and the packet stored.
	PushSSRCChange
	// PushResync means the timestamps jumped (or the sender's clock drifted
	// so far that packets kept arriving late); playout was realigned on
	// this packet, which was stored.
	PushResync
	// PushDuplicate means every sample of the packet was already buffered.
	PushDuplicate
	// PushLate means the packet's audio was due before the playout point.
	PushLate
	// PushUnsupported means the payload type is not G.711 or the payload is
	// empty or too long; the packet was ignored.
	PushUnsupported
)

var pushResultNames = [...]string{"accepted", "ssrc_change", "resync", "duplicate", "late", "unsupported"}

// String returns a snake_case name for logs and metrics.
func (r PushResult) String() string {
	if int(r) < len(pushResultNames) {
		return pushResultNames[r]
	}
	return fmt.Sprintf("PushResult(%d)", int(r))
}

// FrameStatus says how JitterBuffer.Pop filled a frame.
type FrameStatus int

// Statuses of JitterBuffer.Pop.
const (
	// FrameIdle means no packet has been received yet; the frame is silence.
	FrameIdle FrameStatus = iota
	// FramePlayed means every sample of the frame came from received audio.
	FramePlayed
	// FrameConcealed means samples were missing and were replaced by an
	// attenuated repeat of the last good frame.
	FrameConcealed
	// FrameSilence means samples were missing and silence was played: the
	// stream has not reached its first sample yet (the initial delay) or
	// loss lasted longer than concealment covers.
	FrameSilence
)

var frameStatusNames = [...]string{"idle", "played", "concealed", "silence"}

// String returns a snake_case name for logs and metrics.
func (s FrameStatus) String() string {
	if int(s) < len(frameStatusNames) {
		return frameStatusNames[s]
	}
	return fmt.Sprintf("FrameStatus(%d)", int(s))
}

const (
	// minRingSize is the smallest ring (512 ms at 8 kHz). A ring holds
	// what Pop lets the buffer keep (twice the target delay and the
	// overflow slack), a packet of up to a quarter of it (128 ms) and as
	// much again: a packet further ahead is a jump, and realigns, as Pop
	// would have skipped to it anyway (ringSize).
	minRingSize = 1 << 12
	// lateResync consecutive late packets mean the sender's clock runs
	// slower than ours (or its timestamps jumped back): realign.
	lateResync = 5
	// overflowSlack is how far past twice the target delay the buffer may
	// grow before Pop drops audio: 100 ms.
	overflowSlack = 800
)

// JitterOptions configure a JitterBuffer. Zero fields take the defaults.
type JitterOptions struct {
	// Ptime is the length of the frame Pop returns, 10–60 ms (default 20 ms).
	Ptime time.Duration
	// Delay is the target playout delay behind the newest timestamp seen
	// when the stream starts (default 40 ms, at least one frame).
	Delay time.Duration
}

// JitterBuffer reorders inbound G.711 RTP, drops duplicates and late
// packets, conceals loss and hands out fixed frames of 8 kHz PCM once per
// ptime. It is a timeline of samples indexed by RTP timestamp, so it copes
// with any packetisation on the sender side. It decodes on Push (the
// payload type picks PCMU or PCMA per packet), so the pipeline reads
// "PCMU(decode) -> Jitter(40ms)". It is pure (no goroutines, no clock: the
// caller pulls a frame every ptime) and not safe for concurrent use.
// CodedJitterBuffer is the same buffer for a G.711 passthrough.
type JitterBuffer struct {
	timeline[int16]
	scratch []int16
}

// NewJitterBuffer returns an empty buffer.
func NewJitterBuffer(opts JitterOptions) (*JitterBuffer, error) {
	j := &JitterBuffer{scratch: make([]int16, 0, 480)}
	if err := j.init(opts, 0, concealPCM); err != nil {
		return nil, err
	}
	return j, nil
}

// Push stores the audio of one RTP packet. The payload is decoded
// immediately and not retained.
func (j *JitterBuffer) Push(h *rtp.Header, payload []byte) PushResult {
	codec, ok := acceptPacket(h, payload, len(j.ring))
	if !ok {
		return PushUnsupported
	}
	j.scratch = codec.DecodeFrame(j.scratch[:0], payload)
	return j.push(h, j.scratch)
}

// Pop appends the next frame (ptime of 8 kHz PCM) to dst and says how it
// was filled. Call it once per ptime on the playout clock.
func (j *JitterBuffer) Pop(dst []int16) ([]int16, FrameStatus) { return j.pop(dst) }

// acceptPacket returns the codec of a packet the buffers can store: G.711,
// with a payload that is neither empty nor longer than a quarter of the
// ring (of ring samples).
func acceptPacket(h *rtp.Header, payload []byte, ring int) (Codec, bool) {
	codec, ok := CodecByPayloadType(h.PayloadType)
	if !ok || len(payload) == 0 || len(payload) > ring/4 {
		return Codec{}, false
	}
	return codec, true
}

// timeline is the jitter buffer proper, shared by JitterBuffer (T is an
// int16 PCM sample) and CodedJitterBuffer (T is a G.711 code word): one
// element per 8 kHz sample either way, so the reordering, late, loss and
// resync rules, and the statuses that feed the stats, are one piece of
// code whatever the buffer holds.
type timeline[T int16 | byte] struct {
	frame   int // samples per Pop
	target  int // playout delay in samples
	ring    []T
	mask    uint32 // len(ring) - 1 (a power of two)
	present bitset // which samples of ring hold received audio
	silence T      // what a missing sample plays as
	// attenuate fills the missing samples of out from last, for the
	// step-th successive concealed frame (concealGains[step]).
	attenuate func(out, last []T, miss []bool, step int)

	started  bool
	ssrc     uint32
	play     uint32 // timestamp of the next sample Pop returns
	first    uint32 // first timestamp of the stream: silence before it is not loss
	newest   uint32 // end timestamp of the newest stored audio
	lateRun  int
	conceal  int    // consecutive fully concealed frames
	last     []T    // last frame played from real audio
	miss     []bool // which samples of the frame being popped are lost
	haveLast bool
	dropped  int
}

func (j *timeline[T]) init(opts JitterOptions, silence T, attenuate func(out, last []T, miss []bool, step int)) error {
	if opts.Ptime == 0 {
		opts.Ptime = 20 * time.Millisecond
	}
	if opts.Delay == 0 {
		opts.Delay = 40 * time.Millisecond
	}
	if opts.Ptime < 10*time.Millisecond || opts.Ptime > 60*time.Millisecond {
		return fmt.Errorf("jitter buffer: %w: %v", errBadPtime, opts.Ptime)
	}
	j.silence, j.attenuate = silence, attenuate
	j.SetPtime(opts.Ptime)
	j.target = max(samplesOf(opts.Delay), j.frame)
	size := ringSize(j.target)
	j.ring = make([]T, size)
	j.present = make(bitset, size/64)
	j.mask = uint32(size - 1)
	return nil
}

// ringSize is the ring of a buffer with target delay target (samples):
// the smallest power of two, at least minRingSize, that holds twice what
// Pop lets the buffer keep (2×target + overflowSlack) and the largest
// packet Push takes (a quarter of it). 512 ms (4 KiB of code words) at the
// default 40 ms; it was 2 s for any target before, which no packet could
// use (Pop skips past 2×target + overflowSlack).
func ringSize(target int) int {
	size := minRingSize
	for size < 2*(2*target+overflowSlack) {
		size *= 2
	}
	return size
}

// samplesOf converts a duration to a number of 8 kHz samples.
func samplesOf(d time.Duration) int { return int(d * ClockRate / time.Second) }

// String names the stage, e.g. "Jitter(40ms)".
func (j *timeline[T]) String() string {
	return fmt.Sprintf("Jitter(%dms)", j.target/8)
}

// SetPtime changes the length of the frames Pop returns (10–60 ms; out of
// range values are clamped).
func (j *timeline[T]) SetPtime(ptime time.Duration) {
	ptime = min(max(ptime, 10*time.Millisecond), 60*time.Millisecond)
	j.frame = samplesOf(ptime)
	if cap(j.last) < j.frame {
		j.last = make([]T, j.frame)
		j.haveLast = false
	}
	j.last = j.last[:j.frame]
	j.miss = make([]bool, j.frame)
}

// Ptime returns the frame length of Pop.
func (j *timeline[T]) Ptime() time.Duration {
	return time.Duration(j.frame) * time.Second / ClockRate
}

// Buffered returns how much audio is stored ahead of the playout point.
func (j *timeline[T]) Buffered() time.Duration {
	if !j.started {
		return 0
	}
	return time.Duration(max(int32(j.newest-j.play), 0)) * time.Second / ClockRate
}

// Dropped returns how many samples were discarded because the buffer grew
// far past its target (the sender's clock running fast, or a burst).
func (j *timeline[T]) Dropped() int { return j.dropped }

// release drops the ring (the session closed); the buffer must not be used
// afterwards.
func (j *timeline[T]) release() { j.ring, j.present, j.last, j.miss = nil, nil, nil, nil }

// Reset forgets the stream; the next packet starts a new one.
func (j *timeline[T]) Reset() {
	j.started = false
	j.haveLast = false
	j.conceal = 0
	j.lateRun = 0
	clear(j.present)
}

// realign makes ts play after the target delay.
func (j *timeline[T]) realign(ts uint32) {
	clear(j.present)
	j.play = ts - uint32(j.target)
	j.first = ts
	j.newest = ts
	j.lateRun = 0
}

// push stores the samples of one accepted packet (see acceptPacket),
// converted to T, one per timestamp from h.Timestamp on.
func (j *timeline[T]) push(h *rtp.Header, samples []T) PushResult {
	n := len(samples)
	res := PushAccepted
	switch {
	case !j.started:
		j.Reset()
		j.started = true
		j.ssrc = h.SSRC
		j.realign(h.Timestamp)
	case h.SSRC != j.ssrc:
		j.Reset()
		j.started = true
		j.ssrc = h.SSRC
		j.realign(h.Timestamp)
		res = PushSSRCChange
	}
	d := int32(h.Timestamp - j.play)
	switch {
	case int(d)+n <= 0:
		j.lateRun++
		if j.lateRun < lateResync {
			return PushLate
		}
		j.realign(h.Timestamp)
		res = PushResync
	case int(d)+n > len(j.ring)-j.frame:
		j.realign(h.Timestamp)
		res = PushResync
	}
	j.lateRun = 0
	fresh := 0
	for i, s := range samples {
		ts := h.Timestamp + uint32(i)
		if int32(ts-j.play) < 0 {
			continue // this part is already played
		}
		pos := ts & j.mask
		if j.present.has(pos) {
			continue
		}
		j.ring[pos] = s
		j.present.set(pos)
		fresh++
	}
	if end := h.Timestamp + uint32(n); int32(end-j.newest) > 0 {
		j.newest = end
	}
	if fresh == 0 && res == PushAccepted {
		return PushDuplicate
	}
	return res
}

// pop appends the next frame to dst and says how it was filled.
func (j *timeline[T]) pop(dst []T) ([]T, FrameStatus) {
	base := len(dst)
	dst = grow(dst, j.frame)
	out := dst[base:]
	if !j.started {
		fill(out, j.silence)
		return dst, FrameIdle
	}
	// Far more buffered than the target (a burst after a network stall, or
	// a sender clock running fast): skip ahead so the delay stays bounded.
	if ahead := int(int32(j.newest - j.play)); ahead > 2*j.target+overflowSlack {
		skip := ahead - j.target
		for i := 0; i < skip; i++ {
			j.present.unset((j.play + uint32(i)) & j.mask)
		}
		j.play += uint32(skip)
		j.dropped += skip
	}
	got, missing, priming := 0, 0, 0
	clear(j.miss)
	for i := range out {
		ts := j.play + uint32(i)
		pos := ts & j.mask
		if j.present.has(pos) {
			out[i] = j.ring[pos]
			j.present.unset(pos)
			got++
			continue
		}
		out[i] = j.silence
		if int32(ts-j.first) < 0 {
			priming++
		} else {
			missing++
			j.miss[i] = true
		}
	}
	j.play += uint32(j.frame)
	switch {
	case missing == 0 && got == 0:
		return dst, FrameSilence // still inside the initial delay
	case missing == 0:
		j.conceal = 0
		copy(j.last, out)
		j.haveLast = true
		return dst, FramePlayed
	}
	if got == 0 && priming == 0 {
		j.conceal++
	} else {
		j.conceal = 1
	}
	if !j.haveLast || j.conceal > len(concealGains) {
		return dst, FrameSilence
	}
	j.attenuate(out, j.last, j.miss, j.conceal-1)
	return dst, FrameConcealed
}

// bitset is one bit per ring position (2 KiB for the ring instead of 16).
type bitset []uint64

func (b bitset) has(i uint32) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i uint32)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) unset(i uint32)    { b[i>>6] &^= 1 << (i & 63) }
