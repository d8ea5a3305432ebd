package media

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pion/rtp"
)

// PacketWriter sends one RTP packet. The pacer reuses h and payload after
// the call returns.
type PacketWriter interface {
	WriteRTP(h *rtp.Header, payload []byte) error
}

// EventSource lets another sender (RFC 4733 telephone-events,
// dtmf.Sender) share the pacer's sequence numbers and clock. NextEvent is
// called once per frame tick with the RTP timestamp this tick's audio
// would carry; ok sends the packet (payload type pt, marker, timestamp
// evTS, payload) instead of audio, and the audio queue waits. It uses
// only builtin types, so a sender need not import this package.
type EventSource interface {
	NextEvent(ts uint32) (pt uint8, marker bool, evTS uint32, payload []byte, ok bool)
}

// PacerOptions configure a Pacer. Zero fields take the defaults.
type PacerOptions struct {
	// Codec encodes the audio (default PCMU).
	Codec Codec
	// Ptime is the packet interval, 10–60 ms (default 20 ms).
	Ptime time.Duration
	// SSRC, FirstSeq and FirstTimestamp default to random values (RFC 3550 §5.1).
	SSRC           uint32
	FirstSeq       *uint16
	FirstTimestamp *uint32
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxCatchUp is how many overdue frames one Tick sends back to back
	// before it skips instead (default 5). Skipped frames still advance the
	// timestamp, so the receiver sees a gap, not a time warp.
	MaxCatchUp int
	// Stats, when set, counts sent packets and bytes.
	Stats *Stats
	// Tap, when set, sees every frame slot: the bytes sent, an event, or
	// nothing while paused.
	Tap Tap
	// Encoder, when set (Opus), encodes each frame: the pacer reads a
	// ptime of PCM at its rate from the Playout and sends one packet,
	// timestamps advancing at Codec's clock rate; the tap sees the PCM.
	Encoder Encoder
}

// Pacer sends one RTP packet per ptime on a drift-free schedule: frame n
// is due at start + n*ptime, whatever the scheduling delay of earlier
// frames. It takes each frame from a Playout, sends encoded silence when
// nothing is queued, keeps sequence numbers and timestamps continuous
// across silence, hold and events, and sets the marker bit on the first
// packet of every talkspurt (RFC 3551 §4.1). It is safe for concurrent use:
// Tick runs on the media goroutine while the call goroutine pauses it.
type Pacer struct {
	mu       sync.Mutex
	w        PacketWriter
	src      *Playout
	codec    Codec
	ptime    time.Duration
	frame    int
	now      func() time.Time
	maxCatch int
	stats    *Stats
	events   EventSource
	tap      Tap
	enc      Encoder
	tsStep   int     // RTP ticks per frame
	pcm      []int16 // the frame being encoded (Encoder only)

	started bool
	start   time.Time
	n       int64 // frames since start
	seq     uint16
	ts      uint32
	ssrc    uint32
	paused  bool
	// reanchor moves the schedule to the next Tick after a Resume.
	reanchor bool
	talking  bool // the previous packet carried queued audio
	marker   bool // the next audio packet starts a talkspurt whatever came before
	// kick asks the next Tick to start a talkspurt at once (Kick).
	kick bool

	payload []byte
	hdr     rtp.Header
}

// NewPacer returns a pacer that reads src and writes to w. It sends
// nothing until Tick or Run is called.
func NewPacer(w PacketWriter, src *Playout, opts PacerOptions) (*Pacer, error) {
	if opts.Codec.Name == "" {
		opts.Codec = PCMU
	}
	if opts.Ptime == 0 {
		opts.Ptime = 20 * time.Millisecond
	}
	if err := checkPtime(opts.Ptime); err != nil {
		return nil, fmt.Errorf("new pacer: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxCatchUp <= 0 {
		opts.MaxCatchUp = 5
	}
	p := &Pacer{
		w: w, src: src, codec: opts.Codec, now: opts.Now, maxCatch: opts.MaxCatchUp, stats: opts.Stats, tap: opts.Tap, enc: opts.Encoder,
		ssrc: opts.SSRC, seq: uint16(rand.Uint32()), ts: rand.Uint32(), marker: true,
		payload: make([]byte, 0, 480),
	}
	if p.ssrc == 0 {
		p.ssrc = rand.Uint32() | 1
	}
	if opts.FirstSeq != nil {
		p.seq = *opts.FirstSeq
	}
	if opts.FirstTimestamp != nil {
		p.ts = *opts.FirstTimestamp
	}
	p.setPtime(opts.Ptime)
	return p, nil
}

func checkPtime(d time.Duration) error {
	if d < 10*time.Millisecond || d > 60*time.Millisecond || d%(time.Second/ClockRate) != 0 {
		return fmt.Errorf("%w: %v (10ms..60ms)", errBadPtime, d)
	}
	return nil
}

func (p *Pacer) setPtime(d time.Duration) {
	p.ptime = d
	p.frame = samplesOf(d)
	p.tsStep = p.frame
	if p.enc != nil {
		p.frame = int(d * time.Duration(p.enc.Rate()) / time.Second)
		p.tsStep = int(d * time.Duration(p.codec.ClockRate) / time.Second)
		if cap(p.pcm) < p.frame {
			p.pcm = make([]int16, 0, p.frame)
		}
		if cap(p.payload) < maxPacket {
			p.payload = make([]byte, 0, maxPacket)
		}
	}
}

// String names the stage, e.g. "Pacer(PCMU 20ms)".
func (p *Pacer) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("Pacer(%s %v)", p.codec.Name, p.ptime)
}

// SSRC returns the synchronisation source of the outbound stream.
func (p *Pacer) SSRC() uint32 { return p.ssrc }

// Codec returns the codec of the packets sent.
func (p *Pacer) Codec() Codec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.codec
}

// SetCodec switches the encoding from the next frame on (after a
// re-INVITE, or a deferred session's answer): the timestamps advance at
// c's clock rate.
func (p *Pacer) SetCodec(c Codec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codec = c
	p.setPtime(p.ptime)
}

// setEncoder makes the pacer encode each frame with enc (a deferred
// session's wire coder), or, nil, send the playout's code words.
func (p *Pacer) setEncoder(enc Encoder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enc = enc
	p.setPtime(p.ptime)
}

// SetPtime changes the packet interval from the next frame on; the
// schedule is re-anchored at the next due time, so nothing is sent twice.
func (p *Pacer) SetPtime(d time.Duration) error {
	if err := checkPtime(d); err != nil {
		return fmt.Errorf("set ptime: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		p.start = p.start.Add(time.Duration(p.n) * p.ptime)
		p.n = 0
	}
	p.setPtime(d)
	return nil
}

// SetEventSource installs (or with nil removes) the telephone-event sender.
func (p *Pacer) SetEventSource(e EventSource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = e
}

// Pause stops sending (hold) while timestamps keep advancing with the
// clock; queued audio waits. Resume sends again, starting a talkspurt.
func (p *Pacer) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// Resume undoes Pause. The next Tick sends at once and re-anchors the
// schedule there, so audio queued during the pause (a greeting queued
// before the answer) starts without waiting for the old schedule's slot.
func (p *Pacer) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		p.marker = true
		p.reanchor = true
	}
}

// Kick reports whether a talkspurt may start before its slot: the pacer
// runs, sends silence, and a whole frame of audio is queued. It then arms
// the next Tick to send the next slot's packet at once, marked (the caller
// ticks it now); the packets after it keep the slots of the drift-free
// schedule, so the talkspurt never takes its audio faster than real time
// (a provider streaming in real time leaves no gap) and the timestamps stay
// continuous. The first packet merely leaves early, by less than a ptime:
// the receiver's jitter buffer holds it (RFC 3550: the marker bit says a
// talkspurt starts).
func (p *Pacer) Kick() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.paused || p.talking || p.kick || p.src.Len() < p.ptime {
		return false
	}
	p.kick = true
	return true
}

// Last returns the sequence number and timestamp the next packet will carry.
func (p *Pacer) Last() (seq uint16, ts uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq, p.ts
}

// Tick sends every frame that is due at now (at most MaxCatchUp back to
// back; beyond that the overdue frames are skipped) and returns when the
// next frame is due. The first call anchors the schedule at now. The first
// write error is returned after the remaining frames were tried.
func (p *Pacer) Tick(now time.Time) (next time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		p.started, p.start = true, now
	}
	if p.reanchor {
		p.reanchor = false
		if due := p.start.Add(time.Duration(p.n) * p.ptime); due.After(now) {
			p.start = p.start.Add(now.Sub(due))
		}
	}
	if p.kick {
		p.kick = false
		if due := p.start.Add(time.Duration(p.n) * p.ptime); due.After(now) && !p.paused && !p.talking && p.src.Len() >= p.ptime {
			err = p.sendFrame(due) // the next slot's packet, now
			p.n++
		}
	}
	for {
		due := p.start.Add(time.Duration(p.n) * p.ptime)
		if due.After(now) {
			return due, err
		}
		if behind := int64(now.Sub(due) / p.ptime); behind >= int64(p.maxCatch) {
			p.n += behind
			p.ts += uint32(behind) * uint32(p.tsStep)
			p.marker = true
			continue
		}
		if e := p.sendFrame(due); e != nil && err == nil {
			err = e
		}
		p.n++
	}
}

// sendFrame sends (or, paused, skips) the frame of the current tick, due
// at due.
func (p *Pacer) sendFrame(due time.Time) error {
	ts := p.ts
	p.ts += uint32(p.tsStep)
	if p.paused {
		if p.tap != nil {
			p.tap.Outbound(Frame{At: due, Samples: p.frame, Codec: p.codec})
		}
		return nil
	}
	if p.events != nil {
		if pt, m, evTS, payload, ok := p.events.NextEvent(ts); ok {
			p.talking = false
			p.marker = true
			if p.tap != nil {
				p.tap.Outbound(Frame{At: due, Samples: p.frame, Codec: p.codec, Event: true})
			}
			return p.write(pt, m, evTS, payload)
		}
	}
	if p.enc != nil {
		return p.sendEncoded(due, ts)
	}
	// PCM is encoded here; a coded queue (passthrough) hands its bytes
	// over as they are, or transcoded after a switch to the other G.711.
	var speech bool
	p.payload, speech = p.src.ReadCoded(p.payload[:0], p.frame, p.codec)
	marker := speech && (!p.talking || p.marker)
	if speech {
		p.marker = false
	}
	p.talking = speech
	if p.tap != nil {
		p.tap.Outbound(Frame{At: due, Samples: p.frame, Coded: p.payload, Codec: p.codec, Speech: speech})
	}
	return p.write(p.codec.PayloadType, marker, ts, p.payload)
}

// sendEncoded sends the frame of an Encoder (Opus): a ptime of queued PCM,
// or of silence, coded into one packet.
func (p *Pacer) sendEncoded(due time.Time, ts uint32) error {
	var speech bool
	p.pcm, speech = p.src.Read(p.pcm[:0], p.frame)
	marker := speech && (!p.talking || p.marker)
	if speech {
		p.marker = false
	}
	p.talking = speech
	if p.tap != nil {
		p.tap.Outbound(Frame{At: due, Samples: p.frame, PCM: p.pcm, Codec: p.codec, Speech: speech})
	}
	var err error
	if p.payload, err = p.enc.Encode(p.payload[:0], p.pcm); err != nil {
		return fmt.Errorf("pacer encode: %w", err)
	}
	return p.write(p.codec.PayloadType, marker, ts, p.payload)
}

func (p *Pacer) write(pt uint8, marker bool, ts uint32, payload []byte) error {
	p.hdr = rtp.Header{Version: 2, PayloadType: pt, Marker: marker, SequenceNumber: p.seq, Timestamp: ts, SSRC: p.ssrc}
	p.seq++
	if err := p.w.WriteRTP(&p.hdr, payload); err != nil {
		return fmt.Errorf("pacer write seq %d: %w", p.hdr.SequenceNumber, err)
	}
	if p.stats != nil {
		p.stats.CountOut(len(payload))
	}
	return nil
}

// Run ticks on the pacer's clock until ctx ends, sleeping until each due
// time. Write errors do not stop it (a peer's ICMP unreachable is routine
// for UDP); the last one is returned with the context's error.
func (p *Pacer) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last write error: %w)", context.Cause(ctx), last)
			}
			return context.Cause(ctx)
		case <-t.C:
		}
		next, err := p.Tick(p.now())
		if err != nil {
			last = err
		}
		t.Reset(next.Sub(p.now()))
	}
}

// rtpTimeAt returns the RTP timestamp that corresponds to now on the
// outbound clock, for RTCP sender reports.
func (p *Pacer) rtpTimeAt(now time.Time) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		return p.ts
	}
	due := p.start.Add(time.Duration(p.n) * p.ptime)
	return p.ts - uint32(int64(due.Sub(now))*int64(p.tsStep)/int64(p.ptime))
}
