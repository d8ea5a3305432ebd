package media

import (
	"fmt"
	"time"

	"github.com/pion/rtp"
)

const (
	packetSlots    = 64 // 1.28 s of 20 ms packets
	packetSlotMask = packetSlots - 1
	// maxPacket is the largest payload stored: one UDP datagram's worth.
	maxPacket = 1500
	// packetConceal is how many frames a stalled stream is concealed for
	// (libopus's PLC fades out) before the buffer plays silence and waits
	// for its target delay again.
	packetConceal = 3
)

// PacketJitterBuffer is the jitter buffer of a packet codec (Opus): it
// keeps whole RTP payloads, one per sequence number, reorders them, drops
// duplicates and late ones, and hands them out in order once the target
// delay is buffered. A missing packet comes out as a loss, with the
// packet after it when that one is already here (its forward error
// correction data can rebuild the lost one), for the decoder to conceal.
// A stream that stalls (no packet newer than the one due) is concealed
// for a few frames, then played as silence until the target delay is
// buffered again. Packets last what their Opus table of contents says
// (OpusPacketSamples), 2.5 to 120 ms, whatever the ptime; the caller pops
// one at a time and keeps time with the durations (Session.deliver). It
// is pure and not safe for concurrent use.
type PacketJitterBuffer struct {
	codec  Codec
	clock  int // RTP ticks per second
	frame  int // ticks per ptime
	target int // playout delay in ticks
	slots  [packetSlots]packetSlot

	started bool
	priming bool // waiting for the target delay to be buffered
	ssrc    uint32
	next    uint16 // sequence number of the packet Pop hands out next
	newest  uint16 // highest sequence number stored
	playTS  uint32 // timestamp where the next packet's audio starts
	endTS   uint32 // end timestamp of the newest stored audio
	lastDur int    // ticks of the last packet played
	lateRun int
	stalled int // consecutive frames concealed for want of packets
	dropped int
}

type packetSlot struct {
	seq     uint16
	ts      uint32
	dur     int
	present bool
	data    []byte
}

// NewPacketJitterBuffer returns an empty buffer of c's packets (c is Opus).
func NewPacketJitterBuffer(c Codec, opts JitterOptions) (*PacketJitterBuffer, error) {
	if !c.opus {
		return nil, fmt.Errorf("packet jitter buffer: %w: %q", errUnknownCodec, c.Name)
	}
	if opts.Ptime == 0 {
		opts.Ptime = 20 * time.Millisecond
	}
	if opts.Delay == 0 {
		opts.Delay = 40 * time.Millisecond
	}
	if opts.Ptime < 10*time.Millisecond || opts.Ptime > 60*time.Millisecond {
		return nil, fmt.Errorf("jitter buffer: %w: %v", errBadPtime, opts.Ptime)
	}
	j := &PacketJitterBuffer{codec: c, clock: c.ClockRate}
	j.SetPtime(opts.Ptime)
	j.target = max(j.ticks(opts.Delay), j.frame)
	return j, nil
}

func (j *PacketJitterBuffer) ticks(d time.Duration) int {
	return int(d * time.Duration(j.clock) / time.Second)
}

// String names the stage, e.g. "Jitter(40ms opus)".
func (j *PacketJitterBuffer) String() string {
	return fmt.Sprintf("Jitter(%dms %s)", j.target*1000/j.clock, j.codec.Name)
}

// SetPtime changes the frame length the session pops per tick (10-60 ms;
// out of range values are clamped).
func (j *PacketJitterBuffer) SetPtime(ptime time.Duration) {
	j.frame = j.ticks(min(max(ptime, 10*time.Millisecond), 60*time.Millisecond))
}

// Ptime returns the frame length.
func (j *PacketJitterBuffer) Ptime() time.Duration {
	return time.Duration(j.frame) * time.Second / time.Duration(j.clock)
}

// Frame is the frame length in RTP ticks.
func (j *PacketJitterBuffer) Frame() int { return j.frame }

// Buffered returns how much audio is stored ahead of the playout point.
func (j *PacketJitterBuffer) Buffered() time.Duration {
	if !j.started {
		return 0
	}
	return time.Duration(j.buffered()) * time.Second / time.Duration(j.clock)
}

func (j *PacketJitterBuffer) buffered() int { return max(int(int32(j.endTS-j.playTS)), 0) }

// resetEnd measures the stored audio again after the sender's timestamps
// jumped back (a new source behind the same SSRC, a restarted clock): the
// end of the audio before the jump no longer lies ahead of the playout
// point, and counting it would make the buffer look full, so that it
// dropped the packets that follow.
func (j *PacketJitterBuffer) resetEnd() {
	j.endTS = j.playTS
	for i := range j.slots {
		s := &j.slots[i]
		if !s.present || int16(s.seq-j.next) < 0 {
			continue
		}
		if end := s.ts + uint32(s.dur); int32(end-j.endTS) > 0 {
			j.endTS = end
		}
	}
}

// Dropped returns how many ticks of audio were discarded because the
// buffer grew far past its target.
func (j *PacketJitterBuffer) Dropped() int { return j.dropped }

// Reset forgets the stream; the next packet starts a new one.
func (j *PacketJitterBuffer) Reset() {
	j.started = false
	for i := range j.slots {
		j.slots[i].present = false
	}
}

// restart makes the packet (seq, ts) the start of the stream.
func (j *PacketJitterBuffer) restart(ssrc uint32, seq uint16, ts uint32) {
	j.Reset()
	j.started, j.priming = true, true
	j.ssrc, j.next, j.newest = ssrc, seq, seq
	j.playTS, j.endTS = ts, ts
	j.lateRun, j.stalled = 0, 0
	j.lastDur = j.frame
}

// Push stores one RTP packet's payload (copied). Packets of another
// payload type, empty, longer than maxPacket or not a valid Opus packet
// are ignored.
func (j *PacketJitterBuffer) Push(h *rtp.Header, payload []byte) PushResult {
	if h.PayloadType != j.codec.PayloadType || len(payload) > maxPacket {
		return PushUnsupported
	}
	dur, ok := OpusPacketSamples(payload)
	if !ok {
		return PushUnsupported
	}
	res := PushAccepted
	switch {
	case !j.started:
		j.restart(h.SSRC, h.SequenceNumber, h.Timestamp)
	case h.SSRC != j.ssrc:
		j.restart(h.SSRC, h.SequenceNumber, h.Timestamp)
		res = PushSSRCChange
	}
	d := int16(h.SequenceNumber - j.next)
	switch {
	case d < 0:
		// Already played (or given up as lost). A run of them means the
		// sender restarted its sequence: follow it.
		if j.lateRun++; j.lateRun < lateResync {
			return PushLate
		}
		j.restart(h.SSRC, h.SequenceNumber, h.Timestamp)
		res = PushResync
	case int(d) >= packetSlots:
		j.restart(h.SSRC, h.SequenceNumber, h.Timestamp)
		res = PushResync
	}
	j.lateRun = 0
	s := &j.slots[h.SequenceNumber&packetSlotMask]
	if s.present && s.seq == h.SequenceNumber {
		return PushDuplicate
	}
	s.seq, s.ts, s.dur, s.present = h.SequenceNumber, h.Timestamp, dur, true
	s.data = append(s.data[:0], payload...)
	if int16(h.SequenceNumber-j.newest) >= 0 {
		j.newest = h.SequenceNumber
	}
	if end := h.Timestamp + uint32(dur); int32(end-j.endTS) > 0 {
		j.endTS = end
	}
	return res
}

// Pop appends the payload of the packet due to dst and says how to play
// it, and for how many RTP ticks:
//   - FramePlayed: payload is the packet, dur its length;
//   - FrameConcealed: the packet is lost (or late): conceal dur ticks,
//     from payload's forward error correction data when fec is true (it
//     is the next packet, which the following Pop hands out as usual), by
//     the decoder's loss concealment when payload is empty;
//   - FrameSilence: dur ticks of silence (the initial delay, or a stream
//     that stalled past concealment);
//   - FrameIdle: no packet yet.
//
// Call it until the durations cover the ptime that elapsed.
func (j *PacketJitterBuffer) Pop(dst []byte) (payload []byte, fec bool, dur int, st FrameStatus) {
	if !j.started {
		return dst, false, j.frame, FrameIdle
	}
	// Far more buffered than the target (a burst after a stall, a sender
	// whose clock runs fast): drop the oldest so the delay stays bounded.
	for j.buffered() > 2*j.target+j.ticks(100*time.Millisecond) && int16(j.newest-j.next) > 0 {
		s := &j.slots[j.next&packetSlotMask]
		if s.present && s.seq == j.next {
			j.playTS = s.ts + uint32(s.dur)
			j.dropped += s.dur
			s.present = false
		} else {
			j.playTS += uint32(j.lastDur)
			j.dropped += j.lastDur
		}
		j.next++
	}
	if j.priming {
		if j.buffered() < j.target {
			return dst, false, j.frame, FrameSilence
		}
		j.priming = false
	}
	s := &j.slots[j.next&packetSlotMask]
	if s.present && s.seq == j.next {
		s.present = false
		j.next++
		back := int32(s.ts-j.playTS) < 0
		j.playTS = s.ts + uint32(s.dur)
		if back {
			j.resetEnd()
		}
		j.lastDur, j.stalled = s.dur, 0
		return append(dst, s.data...), false, s.dur, FramePlayed
	}
	if int16(j.newest-j.next) <= 0 {
		// Nothing newer: the packet is late, or the stream stalled.
		// Conceal a few frames without giving the packet up, then wait.
		if j.stalled++; j.stalled > packetConceal {
			j.priming = true
			return dst, false, j.frame, FrameSilence
		}
		return dst, false, j.frame, FrameConcealed
	}
	// Lost: a newer packet is here. It tells how long the gap is.
	j.next++
	dur = j.lastDur
	n := &j.slots[j.next&packetSlotMask]
	haveNext := n.present && n.seq == j.next
	if haveNext {
		if gap := int(int32(n.ts - j.playTS)); gap > 0 && gap <= opusMaxSamples {
			dur = lostLength(gap)
		}
	}
	j.playTS += uint32(dur)
	if haveNext {
		return append(dst, n.data...), true, dur, FrameConcealed
	}
	return dst, false, dur, FrameConcealed
}

// lostLength is how long a lost packet lasted, from the timestamp gap
// between the audio played and the packet after it. Every Opus packet
// lasts a whole number of 2.5 ms steps, so a consistent sender's gaps are
// such numbers; a gap that is not (timestamps that disagree with the
// packets' own lengths, e.g. 5 ticks) is taken to the nearest step, and
// at least one: the lost packet is still concealed, for a length libopus
// can conceal, and the timeline stays as near the sender's as it can.
func lostLength(gap int) int {
	return max((gap+opusStep/2)/opusStep*opusStep, opusStep)
}
