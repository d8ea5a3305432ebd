package media

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"github.com/rs/zerolog"
)

// SessionOptions configure a Session. Zero fields take the defaults.
type SessionOptions struct {
	// Codec is the negotiated codec (default PCMU): G.711 (inbound
	// packets may use either law; they are kept in Codec's), G.722, or
	// Opus (OpusCodec).
	Codec Codec
	// Rate is the PCM rate an Opus session decodes to and encodes from:
	// the rate its main consumer takes, so nothing is resampled between
	// them (default 24000, the model's). G.711 and G.722 have their own
	// rates (8 and 16 kHz).
	Rate int
	// Encoder tunes an Opus session's encoder (the peer's fmtp).
	Encoder EncoderOptions
	// Deferred starts the session before its codec is settled (settle.go):
	// Codec is the first one offered until SettleCodec puts the answered
	// one on the wire, and the session's own audio is PCM at Rate
	// whatever the codec.
	Deferred bool
	// Ptime is the packet and frame interval, 10–60 ms (default 20 ms).
	Ptime time.Duration
	// JitterDelay is the jitter buffer's target delay (default 40 ms).
	JitterDelay time.Duration
	// EventPayloadType is the negotiated telephone-event payload type
	// (RFC 4733; default 101).
	EventPayloadType uint8
	// Remote is the RTP address from the SDP. RTP is sent there until
	// the peer's packets arrive; then it follows their source address
	// (symmetric RTP, RFC 4961), latched as sourceLatch describes: only
	// the caller steers it, strangers' packets are dropped. May be zero:
	// nothing is sent until the first inbound packet.
	Remote netip.AddrPort
	// RelatchAfter is how long the latched source must be silent before
	// another source carrying its SSRC may take over (default
	// DefaultRelatchAfter).
	RelatchAfter time.Duration
	// NATGrace is how long after our first packet out a source other than
	// the SDP's may latch when the SDP names a reachable address that sends
	// nothing (default DefaultNATGrace).
	NATGrace time.Duration
	// Strangers, when set, counts RTP and RTCP packets from sources other
	// than the latched peer, which are dropped (a metric shared by calls).
	// With SRTP, packets that fail authentication (or replay) count too.
	Strangers Counter
	// SRTP, when set, protects both directions (RTP/SAVP, RFC 3711) with
	// these SDES keys: inbound packets are authenticated and decrypted
	// before anything else looks at them (the source latch included).
	SRTP *SRTPKeys
	// Transport, when set, carries the packets instead of a port pair (a
	// WebRTC peer connection, which secures and routes them itself): the
	// pacer writes to it, its owner hands inbound packets to Receive, and
	// the session sends no RTCP (the transport does).
	Transport PacketWriter
	// MediaTimeout ends the media when no RTP arrived for this long: OnTimeout
	// is called once. Zero disables it.
	MediaTimeout time.Duration
	// RTCPInterval is the mean RTCP report interval (default 5 s; each
	// interval is randomised over [0.5, 1.5] times it, RFC 3550 §6.2).
	RTCPInterval time.Duration
	// CNAME is the RTCP canonical name (default "switchboard").
	CNAME string
	// OnFrame runs once per inbound frame tick, after the listeners (see
	// Listen), on the media goroutine, from the first received packet on:
	// a clock for what times out between packets (an RFC 4733 event whose
	// end packets were lost).
	OnFrame func(at time.Time)
	// OnEvent receives telephone-event packets raw, with their header, on
	// the media goroutine as they are read. The slices are reused after the
	// call returns.
	OnEvent func(h *rtp.Header, payload []byte)
	// OnTimeout is called once, on the media goroutine, with an error
	// wrapping ErrMediaTimeout. The caller sends BYE with a Reason header.
	OnTimeout func(err error)
	// Tap, when set, observes every inbound frame delivered and every
	// outbound frame sent (call health, recording), on the media goroutine,
	// always as 8 kHz audio (a wideband session resamples for it).
	Tap Tap
	// Logger receives the session's few events (latching, SSRC changes).
	Logger zerolog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Scheduler runs the session's frame ticks (default SharedScheduler).
	Scheduler *Scheduler
}

// Counter counts events, e.g. a prometheus.Counter.
type Counter interface{ Inc() }

// Session is the media of one call: it owns an RTP/RTCP port pair and a
// frame clock run by a Scheduler, whose ticks read the sockets without
// blocking (each packet keeps the kernel's receive time), run the pacer,
// pull the jitter buffer, send RTCP reports and watch the media timeout.
// The session has no goroutine of its own: the scheduler's few workers
// tick every session. Everything called back (OnAudio, OnPayload, OnEvent,
// OnTimeout, the Tap) runs on the ticking worker, one tick of a session at
// a time; "the media goroutine" in this package means that. Close
// releases everything and returns the ports to the pool.
type Session struct {
	opts  SessionOptions
	pair  *PortPair
	log   zerolog.Logger
	now   func() time.Time
	stats Stats

	playout *Playout
	pacer   *Pacer
	// dec and enc code a G.722 or Opus session's audio (nil for G.711,
	// whose code words are kept and converted by table).
	dec Decoder
	enc Encoder

	// listeners take the inbound audio (listen.go); lmu serializes
	// changes to the set.
	lmu       sync.Mutex
	listeners atomic.Pointer[listenerSet]

	mu         sync.Mutex
	remote     netip.AddrPort
	remoteRTCP netip.AddrPort
	latch      sourceLatch
	codecPT    uint8               // the negotiated audio payload type (SetCodec)
	codedJB    *CodedJitterBuffer  // G.711 and G.722: code words
	pktJB      *PacketJitterBuffer // set in an Opus session
	tap        Tap                 // opts.Tap, behind a RateTap in an Opus session
	rx         rxStats
	report     reportState
	timeout    time.Duration
	timedOut   bool
	outBuf     []byte

	lastRTP atomic.Int64 // unix nanos of the last inbound RTP (or of the start)
	// settled says a deferred session's answer came (SettleCodec).
	settled atomic.Bool

	srtp   atomic.Pointer[srtpState] // nil: plain RTP
	encBuf []byte                    // SRTP output of WriteRTP (pacer only)
	encHdr rtp.Header                // scratch header of WriteRTP

	// The frame clock (scheduler): worker and the heap fields are the
	// worker's (under its mutex), the rest is the tick's (under tickMu).
	worker       *schedWorker
	due          int64 // schedWorker.mono()
	idx          int
	woken        bool
	removed      atomic.Bool
	tickMu       sync.Mutex
	ptimeChanged atomic.Bool
	inStart      time.Time
	inN          int64
	inPtime      time.Duration
	in           inFrame
	nextReport   time.Time
	nextRTCPRead time.Time
	tickNow      time.Time // the running tick's time
	rtpRx        *rxSocket
	rxPkt        rtp.Packet // drainRTP's packet: a local escapes, one allocation a tick
	rtcpRx       *rxSocket
	decBuf       []byte

	closeOnce sync.Once
	closeErr  error
}

// rtcpPoll is how often a tick reads the RTCP socket: reports come every
// few seconds and nothing about them is urgent.
const rtcpPoll = 100 * time.Millisecond

// NewSession starts the media of a call on pair, which it owns from now on
// (Close closes it); pair is nil when opts.Transport carries the packets.
func NewSession(pair *PortPair, opts SessionOptions) (*Session, error) {
	if opts.Codec.Name == "" {
		opts.Codec = PCMU
	}
	if opts.Ptime == 0 {
		opts.Ptime = 20 * time.Millisecond
	}
	if opts.Rate == 0 {
		opts.Rate = 24000
	}
	if opts.EventPayloadType == 0 {
		opts.EventPayloadType = 101
	}
	if opts.RTCPInterval == 0 {
		opts.RTCPInterval = 5 * time.Second
	}
	if opts.CNAME == "" {
		opts.CNAME = "switchboard"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if (pair == nil) == (opts.Transport == nil) {
		return nil, errors.New("new session: needs a port pair or a transport, not both")
	}
	s := &Session{opts: opts, pair: pair, log: opts.Logger, now: opts.Now,
		timeout: opts.MediaTimeout, outBuf: make([]byte, 1500), decBuf: make([]byte, 1500)}
	if err := s.initCodec(); err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	if opts.SRTP != nil {
		st, err := newSRTPState(*opts.SRTP)
		if err != nil {
			s.closeCoders()
			return nil, fmt.Errorf("new session: %w", err)
		}
		s.srtp.Store(st)
		s.encBuf = make([]byte, 1500+st.authTagOverRTP)
	}
	var w PacketWriter = s
	if opts.Transport != nil {
		w = opts.Transport
	}
	var err error
	s.pacer, err = NewPacer(w, s.playout, PacerOptions{Codec: opts.Codec, Ptime: opts.Ptime, Now: opts.Now, Stats: &s.stats, Tap: s.tap, Encoder: s.enc})
	if err != nil {
		s.closeCoders()
		return nil, fmt.Errorf("new session: %w", err)
	}
	s.playout.onWrite = s.startTalkspurt
	s.latch = newSourceLatch(opts.RelatchAfter, opts.NATGrace)
	s.codecPT = opts.Codec.PayloadType
	s.stats.clock.Store(int32(opts.Codec.ClockRate))
	s.rx.clock = opts.Codec.ClockRate
	s.latch.signal(opts.Remote)
	s.setRemoteLocked(opts.Remote)
	now := s.now()
	s.lastRTP.Store(now.UnixNano())
	if pair != nil {
		s.rtpRx, s.rtcpRx = newRxSocket(pair.RTP, 1500), newRxSocket(pair.RTCP, 1500)
	}
	s.in = inFrame{pcm: make([]int16, 0, 480), coded: make([]byte, 0, 480)}
	if s.pktJB != nil || opts.Deferred {
		s.in.pcm, s.in.coded = make([]int16, 0, opusMaxSamples), make([]byte, 0, maxPacket)
	}
	s.inStart, s.inPtime = now, s.jitter().Ptime()
	s.nextReport = now.Add(s.reportInterval())
	sched := opts.Scheduler
	if sched == nil {
		sched = SharedScheduler()
	}
	sched.add(s)
	return s, nil
}

// initCodec sets up the buffers and coders of the session's codec: a
// G.711 session keeps code words both ways (half the memory of PCM: the
// jitter buffer's frames are decoded only for a listener that needs PCM,
// and PCM written to the playout is encoded once, on Write, so the pacer
// sends its bytes as they are); G.722 keeps code words in the jitter
// buffer, decodes them with its decoder and queues PCM at 16 kHz for the
// pacer's encoder; Opus keeps whole packets and PCM at Rate. The tap of
// a wideband session sees 8 kHz through a RateTap.
func (s *Session) initCodec() error {
	o := s.opts
	if o.Deferred {
		return s.initDeferred()
	}
	jopts := JitterOptions{Ptime: o.Ptime, Delay: o.JitterDelay}
	s.tap = o.Tap
	var err error
	switch {
	case o.Codec.IsG711():
		s.playout = NewCodedPlayout(o.Codec)
		s.codedJB, err = NewCodedJitterBuffer(o.Codec, jopts)
		return err
	case o.Codec.opus:
		if s.pktJB, err = NewPacketJitterBuffer(o.Codec, jopts); err != nil {
			return err
		}
	default:
		if s.codedJB, err = NewCodedJitterBuffer(o.Codec, jopts); err != nil {
			return err
		}
	}
	if s.dec, err = o.Codec.NewDecoder(o.Rate); err != nil {
		return err
	}
	if s.enc, err = o.Codec.NewEncoder(o.Rate, o.Encoder); err != nil {
		s.closeCoders()
		return err
	}
	s.playout = NewPlayoutAt(s.enc.Rate())
	if o.Tap != nil {
		if s.tap, err = NewRateTap(o.Tap, s.dec.Rate(), s.enc.Rate()); err != nil {
			s.closeCoders()
			return err
		}
	}
	return nil
}

// closeCoders frees the decoder and encoder (libopus memory).
func (s *Session) closeCoders() {
	if s.dec != nil {
		_ = s.dec.Close()
	}
	if s.enc != nil {
		_ = s.enc.Close()
	}
}

// LocalPort returns the RTP port to put in the SDP (RTCP is one above);
// 0 on a Transport.
func (s *Session) LocalPort() int {
	if s.pair == nil {
		return 0
	}
	return s.pair.Port()
}

// Playout returns the outbound queue (audio tagged by item id: G.711 code
// words, or PCM at the encoder's rate for G.722 and Opus). Writers
// (Session.Writer) convert into it.
func (s *Session) Playout() *Playout { return s.playout }

// Pacer returns the outbound pacer, e.g. to install a telephone-event source.
func (s *Session) Pacer() *Pacer { return s.pacer }

// Stats returns a snapshot of the call's media counters.
func (s *Session) Stats() StatsSnapshot { return s.stats.Snapshot() }

// String shows both chains, the listeners' after "=>", e.g.
// "RTP -> Jitter(40ms PCMU) => [PCMU(decode) -> Resample(8k->24k) -> PCM16LE(24k)] | Playout(PCMU) -> Pacer(PCMU 20ms) -> RTP",
// or for an Opus leg "RTP -> Jitter(40ms opus) -> Opus(decode 24k) => [...] | Playout(24k) -> Opus(encode 24k) -> Pacer(opus 20ms) -> RTP".
func (s *Session) String() string {
	s.mu.Lock()
	jb := s.jitter().String()
	s.mu.Unlock()
	wire, out := "RTP", "RTP"
	if st := s.srtp.Load(); st != nil {
		wire = "SRTP(" + st.keys.Suite + ") -> RTP"
		out = "RTP -> SRTP(" + st.keys.Suite + ")"
	}
	in := wire + " -> " + jb
	if s.dec != nil {
		in += " -> " + s.dec.String()
	}
	in += s.listenersString()
	play := s.playout.String()
	if fm := s.playout.form(); !fm.coded && s.enc != nil {
		play += " -> " + s.enc.String()
	} else if c := s.pacer.Codec(); fm.coded && !c.sameLaw(fm.codec) {
		play += " -> " + fm.codec.Name + "->" + c.Name + "(transcode)"
	}
	return fmt.Sprintf("%s | %s -> %s -> %s", in, play, s.pacer, out)
}

// jitter is what the session asks of either jitter buffer besides Pop.
type jitter interface {
	Push(h *rtp.Header, payload []byte) PushResult
	SetPtime(time.Duration)
	Ptime() time.Duration
	String() string
}

// jitter returns the buffer in use.
func (s *Session) jitter() jitter {
	if s.pktJB != nil {
		return s.pktJB
	}
	return s.codedJB
}

// Remote returns the address RTP is sent to.
func (s *Session) Remote() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remote
}

// SetRemote takes the RTP address of a new SDP. A different address is
// signalling moving the stream: RTP goes there (RTCP to its port+1) and
// the source latch starts over. The same address again (a re-INVITE that
// changes something else) keeps the latched source.
func (s *Session) SetRemote(ap netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latch.signal(ap) {
		s.setRemoteLocked(ap)
	}
}

func (s *Session) setRemoteLocked(ap netip.AddrPort) {
	s.remote = ap
	if ap.IsValid() {
		s.remoteRTCP = netip.AddrPortFrom(ap.Addr(), ap.Port()+1)
	}
}

// SetSRTP takes the SRTP keys of a new offer/answer (a re-INVITE may
// re-key, RFC 4568 §7.1.4). A direction whose key is unchanged keeps its
// context (and its packet index: a key is never used twice for the same
// index). nil keeps what is in use: the SIP layer refuses a downgrade.
// A deferred session (SessionOptions.Deferred), which started before the
// answer gave the peer's key, may start SRTP here; any other refuses to.
func (s *Session) SetSRTP(keys *SRTPKeys) error {
	cur := s.srtp.Load()
	if keys == nil || (cur != nil && cur.same(*keys)) {
		return nil
	}
	if cur == nil {
		if !s.opts.Deferred {
			return fmt.Errorf("set srtp: %w", errSRTPLate)
		}
		st, err := newSRTPState(*keys)
		if err != nil {
			return fmt.Errorf("set srtp: %w", err)
		}
		// The pacer encrypts into encBuf on the media goroutine.
		s.tickMu.Lock()
		s.encBuf = make([]byte, 1500+st.authTagOverRTP)
		s.srtp.Store(st)
		s.tickMu.Unlock()
		return nil
	}
	st, err := newSRTPState(*keys)
	if err != nil {
		return fmt.Errorf("set srtp: %w", err)
	}
	if cur.keys.Suite == keys.Suite {
		if string(cur.keys.Local) == string(keys.Local) {
			st.txRTP, st.txRTCP = cur.txRTP, cur.txRTCP
		}
		if string(cur.keys.Remote) == string(keys.Remote) {
			st.rxRTP, st.rxRTCP = cur.rxRTP, cur.rxRTCP
		}
	}
	s.srtp.Store(st)
	return nil
}

// SetCodec changes the outbound encoding after a re-INVITE to the other
// G.711 (or another Opus payload type). The session keeps the code words
// of SessionOptions.Codec for its whole life: frames are transcoded to c
// as they are sent, and inbound packets in c to the session's codec, so
// its listeners and writers never change. A deferred session (whose own
// audio is PCM) changes its coders instead (SettleCodec).
func (s *Session) SetCodec(c Codec) {
	if s.opts.Deferred {
		s.mu.Lock()
		o, same := s.opts.Encoder, s.opts.Codec == c
		s.mu.Unlock()
		if same && !s.settled.Load() {
			return // our own offer's first codec, before the answer
		}
		if err := s.SettleCodec(c, o); err != nil {
			s.log.Warn().Err(err).Str("codec", c.Name).Msg("codec not changed")
		}
		return
	}
	s.mu.Lock()
	s.codecPT = c.PayloadType
	if s.pktJB != nil && c.opus {
		s.pktJB.codec = c
	}
	s.mu.Unlock()
	s.pacer.SetCodec(c)
}

// SetPtime changes the packet and frame interval of both directions.
func (s *Session) SetPtime(d time.Duration) error {
	if err := s.pacer.SetPtime(d); err != nil {
		return err
	}
	s.mu.Lock()
	s.jitter().SetPtime(d)
	s.mu.Unlock()
	s.ptimeChanged.Store(true)
	s.worker.wakeNow(s)
	return nil
}

// Hold stops sending RTP (timestamps keep running); Resume restarts it.
func (s *Session) Hold() { s.pacer.Pause() }

// Resume undoes Hold.
func (s *Session) Resume() {
	s.pacer.Resume()
	s.worker.wakeNow(s)
}

// startTalkspurt runs after each write to the playout: audio that starts
// a talkspurt goes out at once, not at the next ptime slot (the pacer keeps
// the cadence from there).
func (s *Session) startTalkspurt() {
	if s.pacer.Kick() {
		s.worker.wakeNow(s)
	}
}

// SetMediaTimeout changes the media timeout (zero disables it, e.g. while
// the peer holds the call) and restarts its count from now.
func (s *Session) SetMediaTimeout(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeout = d
	s.timedOut = false
	s.lastRTP.Store(s.now().UnixNano())
}

// WriteRTP sends one packet to the current remote; it implements
// PacketWriter for the session's pacer.
func (s *Session) WriteRTP(h *rtp.Header, payload []byte) error {
	s.mu.Lock()
	remote := s.remote
	s.mu.Unlock()
	if !remote.IsValid() {
		return errNoRemote
	}
	n, err := h.MarshalTo(s.outBuf)
	if err != nil {
		return fmt.Errorf("marshal rtp: %w", err)
	}
	if n+len(payload) > len(s.outBuf) {
		return fmt.Errorf("%w: %d", errPayloadTooLong, len(payload))
	}
	n += copy(s.outBuf[n:], payload)
	pkt := s.outBuf[:n]
	if st := s.srtp.Load(); st != nil {
		if pkt, err = st.txRTP.EncryptRTP(s.encBuf[:0], pkt, &s.encHdr); err != nil {
			return fmt.Errorf("srtp: %w", err)
		}
	}
	if _, err := s.pair.RTP.WriteToUDPAddrPort(pkt, remote); err != nil {
		return fmt.Errorf("send rtp: %w", err)
	}
	now := s.tickNow // the pacer runs in tick
	s.mu.Lock()
	s.report.sentSinceLast = true
	s.latch.sent(now)
	s.mu.Unlock()
	return nil
}

// Close takes the session off its scheduler (waiting for a tick in
// progress), closes the sockets and returns the ports to the pool. It is
// idempotent and safe to call from any goroutine except the session's own
// callbacks.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.worker.remove(s)
		if s.pair != nil {
			s.closeErr = s.pair.Close()
		}
		s.closeCoders()
		// The buffers go now, even if the session is still referenced
		// (a SIP transaction keeps its call for its timers, 32 s).
		s.mu.Lock()
		if s.codedJB != nil {
			s.codedJB.release()
		}
		s.mu.Unlock()
		s.playout.release()
		s.rtpRx, s.rtcpRx, s.in = nil, nil, inFrame{}
	})
	return s.closeErr
}
