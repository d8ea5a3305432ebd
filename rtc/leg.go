package rtc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"
	"github.com/rs/zerolog"

	"switchboard/call"
	sbmedia "switchboard/media"
	"switchboard/media/opus"
	"switchboard/realtime"
)

// Leg is a call.Leg over a browser's WebRTC peer connection: Opus at
// 24 kHz (or PCMU at 8 kHz) both ways over DTLS-SRTP, and the realtime
// events on the "oai-events" data channel. It cannot send DTMF or
// transfer (call.ErrNotSupported).
type Leg struct {
	srv      *Server
	id       string
	info     call.LegInfo
	log      zerolog.Logger
	codec    codec
	rate     int
	callOpts CallOptions

	ctx    context.Context
	cancel context.CancelCauseFunc
	pc     *webrtc.PeerConnection
	track  *webrtc.TrackLocalStaticSample
	answer string
	result chan result
	// connected is closed once ICE and DTLS are up.
	connected     chan struct{}
	connectedOnce sync.Once

	enc *opus.Encoder // nil for PCMU
	dec *opus.Decoder // nil for PCMU

	mu          sync.Mutex
	sink        call.LegSink
	playout     *sbmedia.Playout
	passthrough bool
	answered    bool
	held        bool
	closed      bool
	events      realtime.Session // the conversation's event channel, once Start found it
	tap         *sbmedia.RateTap // the call's health and recording at 8 kHz (nil: none)
	dc          *webrtc.DataChannel
	dcOpen      chan struct{}
	dcOpenOnce  sync.Once
	wg          sync.WaitGroup

	stats legStats
}

var _ call.Leg = (*Leg)(nil)

type result struct {
	sdp string
	err error
}

// legStats are the RTP counters of a leg.
type legStats struct {
	packetsIn, bytesIn, packetsOut, bytesOut, concealed, ignored atomic.Uint64
	// Read goroutine only, published through the atomics above and below.
	baseSeq, maxSeq uint32
	cycles          uint32
	started         bool
	expected, lost  atomic.Int64
	// What the peer connection measured, refreshed each second by the
	// sender while the connection is up.
	jitter, rtt, remoteLost atomic.Int64
	remoteFraction          atomic.Uint64 // float64 bits
}

// frame is the leg's packet duration: browsers send 20 ms of Opus.
const frame = 20 * time.Millisecond

// gatherTimeout bounds ICE gathering of host candidates: they are the
// local addresses, known at once; past this something is wrong.
const gatherTimeout = 5 * time.Second

// measureEvery is how many frames the sender sends between two reads of
// the peer connection's statistics (one second).
const measureEvery = 50

// maxConcealed is how many lost Opus packets in a row are concealed
// (packet loss concealment); a longer gap is silence.
const maxConcealed = 5

func newLeg(s *Server, c codec, offer string, info call.LegInfo, opts CallOptions, log zerolog.Logger) (*Leg, error) {
	id := uuid.NewString()
	l := &Leg{srv: s, id: id, info: info, codec: c, callOpts: opts, rate: sbmedia.ClockRate, result: make(chan result, 1),
		connected: make(chan struct{}), dcOpen: make(chan struct{})}
	l.log = log.With().Str("call_id", id).Str("channel", "webrtc").Logger()
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	if c.opus {
		l.rate = modelRate
		var err error
		if l.enc, err = opus.NewEncoder(l.rate, opusBitrate); err != nil {
			return nil, err
		}
		if l.dec, err = opus.NewDecoder(l.rate); err != nil {
			_ = l.enc.Close()
			return nil, err
		}
	}
	if err := l.negotiate(offer); err != nil {
		l.cancel(err)
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// modelRate is the rate an Opus leg decodes to and encodes from: the
// model's 24 kHz, so the audio path between them copies.
const modelRate = 24000

// negotiate builds the peer connection with the one chosen codec, applies
// the offer and makes the complete answer (every host candidate in it).
func (l *Leg) negotiate(offer string) error {
	me := &webrtc.MediaEngine{}
	if err := me.RegisterCodec(l.codec.params, webrtc.RTPCodecTypeAudio); err != nil {
		return fmt.Errorf("rtc: codec: %w", err)
	}
	ir := &interceptor.Registry{}
	if err := webrtc.ConfigureRTCPReports(ir); err != nil {
		return fmt.Errorf("rtc: rtcp reports: %w", err)
	}
	if err := webrtc.ConfigureStatsInterceptor(ir); err != nil {
		return fmt.Errorf("rtc: stats: %w", err)
	}
	api := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(l.srv.settings), webrtc.WithInterceptorRegistry(ir))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return fmt.Errorf("rtc: peer connection: %w", err)
	}
	l.pc = pc
	pc.OnConnectionStateChange(l.onState)
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) { l.readTrack(tr) })
	pc.OnDataChannel(l.onDataChannel)
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOffer, err)
	}
	if l.track, err = webrtc.NewTrackLocalStaticSample(l.codec.params.RTPCodecCapability, "audio", "switchboard"); err != nil {
		return fmt.Errorf("rtc: track: %w", err)
	}
	sender, err := pc.AddTrack(l.track)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadOffer, err)
	}
	l.wg.Add(1)
	go func() { // RTCP from the browser feeds the interceptors (reports, stats)
		defer l.wg.Done()
		for {
			if _, _, err := sender.ReadRTCP(); err != nil {
				return
			}
		}
	}()
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadOffer, err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(answer); err != nil {
		return fmt.Errorf("rtc: local description: %w", err)
	}
	select {
	case <-gathered:
	case <-time.After(gatherTimeout):
		return errors.New("rtc: ICE gathering did not complete")
	}
	l.answer = pc.LocalDescription().SDP
	return nil
}

// onState follows the peer connection: connected lets the answer go on;
// failed or closed ends the leg.
func (l *Leg) onState(st webrtc.PeerConnectionState) {
	l.log.Debug().Str("state", st.String()).Msg("peer connection")
	switch st {
	case webrtc.PeerConnectionStateConnected:
		l.connectedOnce.Do(func() { close(l.connected) })
	case webrtc.PeerConnectionStateFailed:
		l.cancel(errors.New("the browser's connection failed"))
	case webrtc.PeerConnectionStateClosed:
		l.cancel(errors.New("the browser closed the connection"))
	}
}

// ID is the call id.
func (l *Leg) ID() string { return l.id }

// Info describes the browser and the route.
func (l *Leg) Info() call.LegInfo { return l.info }

// Context ends when the browser went away or the call hung up.
func (l *Leg) Context() context.Context { return l.ctx }

// Rate is 24 kHz for Opus, 8 kHz for PCMU.
func (l *Leg) Rate() int { return l.rate }

// Codec is "pcmu" for a PCMU leg (a passthrough is possible), else "".
func (l *Leg) Codec() string {
	if l.codec.opus {
		return ""
	}
	return call.EncodingPCMU
}

// Start readies the playout, the 20 ms sender and the event channel.
func (l *Leg) Start(sink call.LegSink, opts call.LegOptions) error {
	q := sbmedia.NewPlayoutAt(l.rate)
	if opts.Passthrough {
		q = sbmedia.NewCodedPlayout(sbmedia.PCMU)
	}
	events, err := l.srv.channels.Channel(l.id)
	if err != nil {
		l.log.Debug().Err(err).Msg("no event channel for this call")
	}
	var tap *sbmedia.RateTap
	if opts.Tap != nil {
		if tap, err = sbmedia.NewRateTap(opts.Tap, l.rate, l.rate); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.sink, l.playout, l.passthrough, l.events, l.tap = sink, q, opts.Passthrough, events, tap
	l.mu.Unlock()
	l.wg.Add(2)
	go l.send()
	go l.watch()
	if events != nil {
		l.wg.Add(1)
		go l.pumpEvents(events)
	}
	return nil
}

// watch closes the peer connection once the leg's context ends, so the
// browser learns at once that the call is over.
func (l *Leg) watch() {
	defer l.wg.Done()
	<-l.ctx.Done()
	if err := l.pc.Close(); err != nil {
		l.log.Debug().Err(err).Msg("close peer connection")
	}
}

// Ring does nothing: HTTP has no provisional answer to send.
func (l *Leg) Ring() error { return nil }

// Answer hands the SDP answer to the browser's request and waits for ICE
// and DTLS; the queued audio (a greeting) goes out once they are up.
func (l *Leg) Answer(ctx context.Context) error {
	select {
	case l.result <- result{sdp: l.answer}:
	default:
		return errors.New("rtc: answered twice")
	}
	start := time.Now()
	t := time.NewTimer(l.srv.opts.ConnectTimeout)
	defer t.Stop()
	m := l.srv.opts.Metrics
	select {
	case <-l.connected:
		m.offer(offerAnswered)
		m.connected(l.codec.params.MimeType, time.Since(start))
	case <-t.C:
		m.offer(offerNotConnected)
		err := errors.New("the browser did not connect (ICE/DTLS) in time")
		l.cancel(err)
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-l.ctx.Done():
		return context.Cause(l.ctx)
	}
	l.mu.Lock()
	l.answered = true
	l.mu.Unlock()
	l.log.Info().Str("codec", l.codec.params.MimeType).Msg("browser connected")
	return nil
}

// Reject refuses the browser's request with the call's status.
func (l *Leg) Reject(status int, reason string, retryAfter time.Duration) error {
	select {
	case l.result <- result{err: &call.RejectError{Status: status, Reason: reason, RetryAfter: retryAfter}}:
	default:
	}
	l.cancel(fmt.Errorf("rejected: %d %s", status, reason))
	return nil
}

// Hangup ends the call: the peer connection closes.
func (l *Leg) Hangup(_ context.Context, reason string, _ ...call.Header) error {
	l.cancel(errors.New("hung up: " + reason))
	return nil
}

// Transfer is not possible on a browser call.
func (l *Leg) Transfer(context.Context, string, func(int), ...call.Header) error {
	return call.ErrNotSupported
}

// SendDTMF is not possible on a browser call.
func (l *Leg) SendDTMF(context.Context, string) error { return call.ErrNotSupported }

func (l *Leg) queue() *sbmedia.Playout {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.playout
}

// Play queues PCM at the leg's rate.
func (l *Leg) Play(itemID string, pcm []int16) {
	if q := l.queue(); q != nil {
		q.Write(itemID, pcm)
	}
}

// PlayCoded queues PCMU bytes (passthrough).
func (l *Leg) PlayCoded(itemID string, payload []byte) {
	if q := l.queue(); q != nil {
		q.WriteCoded(itemID, sbmedia.PCMU, payload)
	}
}

// Flush drops the queued audio (barge-in).
func (l *Leg) Flush() (string, int) {
	if q := l.queue(); q != nil {
		return q.Flush()
	}
	return "", 0
}

// Pending is the queued audio not sent yet.
func (l *Leg) Pending() time.Duration {
	if q := l.queue(); q != nil {
		return q.Len()
	}
	return 0
}

// Hold stops (on) or resumes sending audio.
func (l *Leg) Hold(on bool) {
	l.mu.Lock()
	l.held = on
	l.mu.Unlock()
}

// Close ends the leg and waits for its goroutines; it is idempotent.
func (l *Leg) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	events := l.events
	l.mu.Unlock()
	l.cancel(errors.New("call over"))
	var err error
	if l.pc != nil {
		err = l.pc.Close()
	}
	if events != nil {
		_ = events.Close()
	}
	l.wg.Wait()
	if l.enc != nil {
		_ = l.enc.Close()
		_ = l.dec.Close()
	}
	return err
}

// send writes one frame every 20 ms, drift-free, once the call is
// answered and not held: queued audio, else silence (a browser's jitter
// buffer wants a steady stream).
func (l *Leg) send() {
	defer l.wg.Done()
	n := l.rate * int(frame/time.Millisecond) / 1000
	var pcm []int16
	var payload []byte
	next := time.Now()
	t := time.NewTimer(frame)
	defer t.Stop()
	for {
		next = next.Add(frame)
		if d := time.Until(next); d > 0 {
			t.Reset(d)
			select {
			case <-l.ctx.Done():
				return
			case <-t.C:
			}
		} else if l.ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		q, on, tap := l.playout, l.answered && !l.held, l.tap
		l.mu.Unlock()
		if !on {
			continue
		}
		var err error
		var speech bool
		switch {
		case l.enc != nil:
			pcm, speech = q.Read(pcm[:0], n)
			payload, err = l.enc.Encode(payload[:0], pcm)
			if tap != nil {
				tap.Outbound(sbmedia.Frame{At: next, Samples: len(pcm), PCM: pcm, Speech: speech})
			}
		default:
			payload, speech = q.ReadCoded(payload[:0], n, sbmedia.PCMU)
			if tap != nil {
				tap.Outbound(sbmedia.Frame{At: next, Samples: len(payload), Coded: payload, Codec: sbmedia.PCMU, Speech: speech})
			}
		}
		if err != nil {
			l.log.Warn().Err(err).Msg("encode")
			continue
		}
		if err := l.track.WriteSample(media.Sample{Data: payload, Duration: frame}); err != nil {
			continue
		}
		if l.stats.packetsOut.Add(1)%measureEvery == 0 {
			l.measure()
		}
		l.stats.bytesOut.Add(uint64(len(payload)))
	}
}

// readTrack decodes the browser's audio and hands it to the call (its
// own goroutine, the leg's "media goroutine").
func (l *Leg) readTrack(tr *webrtc.TrackRemote) {
	l.log.Debug().Str("codec", tr.Codec().MimeType).Msg("browser audio track")
	var pcm []int16
	var last uint16
	var have bool
	lastSamples := l.rate * int(frame/time.Millisecond) / 1000
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		if pkt.PayloadType != uint8(l.codec.params.PayloadType) {
			l.stats.ignored.Add(1)
			continue
		}
		l.count(pkt)
		gap := 0
		if have {
			d := int16(pkt.SequenceNumber - last)
			if d <= 0 { // late or duplicate: the audio has moved on
				continue
			}
			gap = int(d) - 1
		}
		last, have = pkt.SequenceNumber, true
		l.mu.Lock()
		sink, pass, tap := l.sink, l.passthrough, l.tap
		l.mu.Unlock()
		if sink == nil {
			continue
		}
		now := time.Now()
		if pass {
			if tap != nil {
				tap.Inbound(sbmedia.Frame{At: now, Samples: len(pkt.Payload), Coded: pkt.Payload, Codec: sbmedia.PCMU, Status: sbmedia.FramePlayed})
			}
			sink.Coded(pkt.Payload)
			continue
		}
		if l.dec != nil {
			for i := 0; i < gap && i < maxConcealed; i++ {
				if pcm, err = l.dec.Decode(pcm[:0], nil, lastSamples); err == nil {
					l.stats.concealed.Add(1)
					if tap != nil {
						tap.Inbound(sbmedia.Frame{At: now, Samples: len(pcm), PCM: pcm, Status: sbmedia.FrameConcealed})
					}
					sink.Audio(pcm)
				}
			}
			if pcm, err = l.dec.Decode(pcm[:0], pkt.Payload, 0); err != nil {
				l.stats.ignored.Add(1)
				continue
			}
			lastSamples = len(pcm)
		} else {
			pcm = sbmedia.PCMU.DecodeFrame(pcm[:0], pkt.Payload)
		}
		if tap != nil {
			tap.Inbound(sbmedia.Frame{At: now, Samples: len(pcm), PCM: pcm, Status: sbmedia.FramePlayed})
		}
		sink.Audio(pcm)
	}
}

// count keeps the RFC 3550 counters of an inbound packet.
func (l *Leg) count(pkt *rtp.Packet) {
	s := &l.stats
	s.packetsIn.Add(1)
	s.bytesIn.Add(uint64(len(pkt.Payload)))
	seq := uint32(pkt.SequenceNumber)
	if !s.started {
		s.started, s.baseSeq, s.maxSeq = true, seq, seq
	} else if d := uint16(pkt.SequenceNumber - uint16(s.maxSeq)); d != 0 && d < 0x8000 {
		if uint16(s.maxSeq)+d < uint16(s.maxSeq) {
			s.cycles += 1 << 16
		}
		s.maxSeq = seq
	}
	exp := int64(s.cycles+s.maxSeq-s.baseSeq) + 1
	s.expected.Store(exp)
	s.lost.Store(exp - int64(s.packetsIn.Load()))
}

// Stats are the leg's RTP figures, with the jitter and round trip the
// peer connection measured.
func (l *Leg) Stats() sbmedia.StatsSnapshot {
	s := &l.stats
	return sbmedia.StatsSnapshot{PacketsIn: s.packetsIn.Load(), BytesIn: s.bytesIn.Load(), PacketsOut: s.packetsOut.Load(),
		BytesOut: s.bytesOut.Load(), Lost: s.lost.Load(), Expected: uint64(max(s.expected.Load(), 0)),
		Concealed: s.concealed.Load(), Ignored: s.ignored.Load(), Jitter: time.Duration(s.jitter.Load()),
		RTT: time.Duration(s.rtt.Load()), RemoteLost: s.remoteLost.Load(), RemoteFractionLost: math.Float64frombits(s.remoteFraction.Load())}
}

// measure keeps what the peer connection measured: the inbound jitter,
// and from the browser's receiver reports the round trip and its loss.
func (l *Leg) measure() {
	if l.ctx.Err() != nil {
		return
	}
	s := &l.stats
	for _, st := range l.pc.GetStats() {
		switch v := st.(type) {
		case webrtc.InboundRTPStreamStats:
			s.jitter.Store(int64(v.Jitter * float64(time.Second)))
		case webrtc.RemoteInboundRTPStreamStats:
			s.rtt.Store(int64(v.RoundTripTime * float64(time.Second)))
			s.remoteLost.Store(int64(v.PacketsLost))
			s.remoteFraction.Store(math.Float64bits(v.FractionLost))
		}
	}
}
