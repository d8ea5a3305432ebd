package media

import (
	"sync/atomic"
	"time"
)

// Stats are the per-call media counters. All fields are updated with
// atomics, so Snapshot may be called from any goroutine while the call runs.
type Stats struct {
	packetsIn, bytesIn   atomic.Uint64
	packetsOut, bytesOut atomic.Uint64
	lost                 atomic.Int64 // RFC 3550 cumulative lost (expected - received)
	expected             atomic.Uint64
	duplicates           atomic.Uint64
	late                 atomic.Uint64
	concealed            atomic.Uint64
	silenced             atomic.Uint64
	played               atomic.Uint64
	ssrcChanges          atomic.Uint64
	resyncs              atomic.Uint64
	ignored              atomic.Uint64
	jitter               atomic.Uint32 // RFC 3550 interarrival jitter, timestamp units
	rtcpIn, rtcpOut      atomic.Uint64
	remoteFractionLost   atomic.Uint32 // /256, from the peer's last report block
	remoteJitter         atomic.Uint32
	remoteLost           atomic.Int64
	rtt                  atomic.Int64 // nanoseconds, from the peer's DLSR
	latches              atomic.Uint64
	strangers            atomic.Uint64
	// clock is the RTP clock rate of the timestamps (0: 8000); set
	// before the session's goroutines start, and again when a deferred
	// session settles its codec (SettleCodec).
	clock atomic.Int32
}

// StatsSnapshot is a consistent-enough copy of Stats for logs, metrics and
// the call record.
type StatsSnapshot struct {
	PacketsIn  uint64 `json:"packets_in"`
	BytesIn    uint64 `json:"bytes_in"`
	PacketsOut uint64 `json:"packets_out"`
	BytesOut   uint64 `json:"bytes_out"`
	// Lost is RFC 3550 cumulative loss: expected minus received packets,
	// from the extended sequence numbers (negative with duplicates).
	Lost int64 `json:"lost"`
	// Expected is the number of packets the sequence numbers span.
	Expected uint64 `json:"expected"`
	// Duplicates counts packets whose audio was already buffered.
	Duplicates uint64 `json:"duplicates"`
	// Late counts packets that arrived after their playout time.
	Late uint64 `json:"late"`
	// Played, Concealed and Silenced count frames handed out by the jitter
	// buffer: from received audio, loss-concealed, and silence for gaps.
	Played    uint64 `json:"played_frames"`
	Concealed uint64 `json:"concealed_frames"`
	Silenced  uint64 `json:"silence_frames"`
	// SSRCChanges counts new inbound streams after the first one.
	SSRCChanges uint64 `json:"ssrc_changes"`
	// Resyncs counts timestamp jumps the jitter buffer realigned on.
	Resyncs uint64 `json:"resyncs"`
	// Ignored counts RTP with payload types that are neither audio nor events.
	Ignored uint64 `json:"ignored"`
	// Jitter is the RFC 3550 interarrival jitter of inbound RTP.
	Jitter time.Duration `json:"jitter"`
	// Latches counts inbound sources latched: the first, and each move
	// (silence with the same SSRC, or a new address from signalling).
	Latches uint64 `json:"latches"`
	// Strangers counts RTP and RTCP packets dropped because they came from
	// a source that may not steer the call (not the latched peer).
	Strangers uint64 `json:"strangers"`
	// RTCPIn and RTCPOut count compound RTCP packets.
	RTCPIn  uint64 `json:"rtcp_in"`
	RTCPOut uint64 `json:"rtcp_out"`
	// RemoteFractionLost, RemoteLost and RemoteJitter are what the peer
	// last reported about our stream; RTT is computed from its LSR/DLSR.
	RemoteFractionLost float64       `json:"remote_fraction_lost"`
	RemoteLost         int64         `json:"remote_lost"`
	RemoteJitter       time.Duration `json:"remote_jitter"`
	RTT                time.Duration `json:"rtt"`
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() StatsSnapshot {
	return StatsSnapshot{
		PacketsIn:          s.packetsIn.Load(),
		BytesIn:            s.bytesIn.Load(),
		PacketsOut:         s.packetsOut.Load(),
		BytesOut:           s.bytesOut.Load(),
		Lost:               s.lost.Load(),
		Expected:           s.expected.Load(),
		Duplicates:         s.duplicates.Load(),
		Late:               s.late.Load(),
		Played:             s.played.Load(),
		Concealed:          s.concealed.Load(),
		Silenced:           s.silenced.Load(),
		SSRCChanges:        s.ssrcChanges.Load(),
		Resyncs:            s.resyncs.Load(),
		Ignored:            s.ignored.Load(),
		Jitter:             tsDuration(s.jitter.Load(), int(s.clock.Load())),
		Latches:            s.latches.Load(),
		Strangers:          s.strangers.Load(),
		RTCPIn:             s.rtcpIn.Load(),
		RTCPOut:            s.rtcpOut.Load(),
		RemoteFractionLost: float64(s.remoteFractionLost.Load()) / 256,
		RemoteLost:         s.remoteLost.Load(),
		RemoteJitter:       tsDuration(s.remoteJitter.Load(), int(s.clock.Load())),
		RTT:                time.Duration(s.rtt.Load()),
	}
}

// CountPush records the outcome of JitterBuffer.Push.
func (s *Stats) CountPush(r PushResult) {
	switch r {
	case PushDuplicate:
		s.duplicates.Add(1)
	case PushLate:
		s.late.Add(1)
	case PushSSRCChange:
		s.ssrcChanges.Add(1)
	case PushResync:
		s.resyncs.Add(1)
	case PushUnsupported:
		s.ignored.Add(1)
	}
}

// CountFrame records the outcome of JitterBuffer.Pop.
func (s *Stats) CountFrame(f FrameStatus) {
	switch f {
	case FramePlayed:
		s.played.Add(1)
	case FrameConcealed:
		s.concealed.Add(1)
	case FrameSilence:
		s.silenced.Add(1)
	}
}

// CountOut records one sent RTP packet with a payload of n bytes.
func (s *Stats) CountOut(n int) {
	s.packetsOut.Add(1)
	s.bytesOut.Add(uint64(n))
}

func tsDuration(ts uint32, clock int) time.Duration {
	if clock <= 0 {
		clock = ClockRate
	}
	return time.Duration(ts) * time.Second / time.Duration(clock)
}

// rxStats follows one inbound SSRC the way RFC 3550 appendix A.1, A.3 and
// A.8 describe: extended highest sequence number, expected vs received,
// fraction lost per report interval, and interarrival jitter. Not safe for
// concurrent use; it publishes into Stats.
type rxStats struct {
	started        bool
	ssrc           uint32
	baseSeq        uint32
	maxSeq         uint16
	cycles         uint32
	received       uint64
	expectedPrior  uint64
	receivedPrior  uint64
	transit        int64
	jitter16       int64 // jitter * 16 (RFC 3550 A.8 fixed point)
	lastSR         uint32
	lastSRArrival  time.Time
	carryLost      int64  // loss of earlier SSRCs of this call
	carryExpected  uint64 // expected packets of earlier SSRCs
	arrivalEpoch   time.Time
	haveTransition bool
	clock          int // RTP clock rate (0: 8000), kept across SSRCs
}

// update takes one packet arriving at now. It returns true when the SSRC
// changed and the counters restarted.
func (r *rxStats) update(ssrc uint32, seq uint16, ts uint32, now time.Time) bool {
	changed := r.started && ssrc != r.ssrc
	if !r.started || changed {
		var cl int64
		var ce uint64
		if changed { // keep the call's totals across streams
			cl, ce = r.carryLost+r.lost(), r.carryExpected+r.expected()
		}
		*r = rxStats{started: true, ssrc: ssrc, baseSeq: uint32(seq), maxSeq: seq, arrivalEpoch: now,
			carryLost: cl, carryExpected: ce, clock: r.clock}
	} else if d := seq - r.maxSeq; d != 0 && d < 0x8000 {
		if seq < r.maxSeq {
			r.cycles += 1 << 16
		}
		r.maxSeq = seq
	}
	r.received++
	// Arrival in RTP timestamp units relative to a per-stream epoch.
	clock := r.clock
	if clock <= 0 {
		clock = ClockRate
	}
	arrival := int64(now.Sub(r.arrivalEpoch) * time.Duration(clock) / time.Second)
	transit := arrival - int64(ts)
	if r.haveTransition {
		d := transit - r.transit
		if d < 0 {
			d = -d
		}
		r.jitter16 += d - ((r.jitter16 + 8) >> 4)
	}
	r.transit = transit
	r.haveTransition = true
	return changed
}

func (r *rxStats) extendedMax() uint32 { return r.cycles + uint32(r.maxSeq) }

func (r *rxStats) expected() uint64 {
	return uint64(r.extendedMax() - r.baseSeq + 1)
}

func (r *rxStats) lost() int64 { return int64(r.expected()) - int64(r.received) }

func (r *rxStats) jitter() uint32 { return uint32(r.jitter16 >> 4) }

// fractionLost returns the RFC 3550 A.3 fraction (/256) since the last call.
func (r *rxStats) fractionLost() uint8 {
	exp := r.expected()
	expInt := exp - r.expectedPrior
	recInt := r.received - r.receivedPrior
	r.expectedPrior, r.receivedPrior = exp, r.received
	lostInt := int64(expInt) - int64(recInt)
	if expInt == 0 || lostInt <= 0 {
		return 0
	}
	return uint8(min(lostInt<<8/int64(expInt), 255))
}

// publish copies the reception figures into s.
func (r *rxStats) publish(s *Stats) {
	s.lost.Store(r.carryLost + r.lost())
	s.expected.Store(r.carryExpected + r.expected())
	s.jitter.Store(r.jitter())
}
