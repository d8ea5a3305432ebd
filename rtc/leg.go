package rtc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"switchboard/call"
	sbmedia "switchboard/media"
	"switchboard/realtime"
)

// Leg is a call.Leg over a browser's WebRTC peer connection: Opus (or
// PCMU) both ways over DTLS-SRTP through the same media pipeline as a
// phone (a media.Session on the peer connection's transport: its jitter
// buffer, decoder, listeners, playout and drift-free pacer), and the
// realtime events on the "oai-events" data channel. It cannot send DTMF
// or transfer (call.ErrNotSupported).
type Leg struct {
	srv      *Server
	id       string
	info     call.LegInfo
	log      zerolog.Logger
	codec    codec
	callOpts CallOptions
	// joined: the leg joins a live call (a supervisor's browser) rather
	// than starting one: no event channel, answered before it starts.
	joined bool

	ctx    context.Context
	cancel context.CancelCauseFunc
	pc     *webrtc.PeerConnection
	track  *webrtc.TrackLocalStaticRTP
	answer string
	result chan result
	// connected is closed once ICE and DTLS are up.
	connected     chan struct{}
	connectedOnce sync.Once

	mu         sync.Mutex
	sess       *sbmedia.Session // set by Start
	answered   bool
	held       bool
	closed     bool
	events     realtime.Session // the conversation's event channel, once Start found it
	dc         *webrtc.DataChannel
	dcOpen     chan struct{}
	dcOpenOnce sync.Once
	wg         sync.WaitGroup

	// What the peer connection measured (its RTCP), read at most once a
	// second by Stats.
	measured  atomic.Pointer[measures]
	measureAt atomic.Int64
}

var _ call.Leg = (*Leg)(nil)

type result struct {
	sdp string
	err error
}

// measures are the figures the peer connection's RTCP gives: the round
// trip and the browser's view of our stream.
type measures struct {
	rtt            time.Duration
	remoteLost     int64
	remoteFraction float64
}

// gatherTimeout bounds ICE gathering of host candidates: they are the
// local addresses, known at once; past this something is wrong.
const gatherTimeout = 5 * time.Second

// measureEvery is how often Stats asks the peer connection for its
// figures.
const measureEvery = time.Second

func newLeg(s *Server, c codec, offer string, info call.LegInfo, opts CallOptions, log zerolog.Logger) (*Leg, error) {
	id := uuid.NewString()
	l := &Leg{srv: s, id: id, info: info, codec: c, callOpts: opts, result: make(chan result, 1),
		connected: make(chan struct{}), dcOpen: make(chan struct{})}
	l.log = log.With().Str("call_id", id).Str("channel", "webrtc").Logger()
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	if err := l.negotiate(offer); err != nil {
		l.cancel(err)
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

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
	if l.track, err = webrtc.NewTrackLocalStaticRTP(l.codec.params.RTPCodecCapability, "audio", "switchboard"); err != nil {
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

// Start readies the media session (held until Answer) and the event
// channel.
func (l *Leg) Start(_ call.LegSink, opts call.LegOptions) error {
	mc := sbmedia.PCMU
	if l.codec.opus {
		mc = sbmedia.OpusCodec(uint8(l.codec.params.PayloadType))
	}
	sess, err := sbmedia.NewSession(nil, sbmedia.SessionOptions{Codec: mc, Rate: opts.Rate, Encoder: sbmedia.EncoderOptions{Bitrate: opusBitrate},
		Transport: trackWriter{l.track}, Tap: opts.Tap, Logger: l.log})
	if err != nil {
		return err
	}
	sess.Hold() // nothing goes out before the browser is connected
	var events realtime.Session
	if !l.joined {
		if events, err = l.srv.channels.Channel(l.id); err != nil {
			l.log.Debug().Err(err).Msg("no event channel for this call")
		}
	}
	l.mu.Lock()
	l.sess, l.events = sess, events
	l.mu.Unlock()
	l.applyHold() // a joined leg is connected already: it sends at once
	l.wg.Add(1)
	go l.watch()
	if events != nil {
		l.wg.Add(1)
		go l.pumpEvents(events)
	}
	return nil
}

// Audio is the leg's media session (call.Audio).
func (l *Leg) Audio() call.Audio {
	if s := l.session(); s != nil {
		return s
	}
	return nil
}

func (l *Leg) session() *sbmedia.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess
}

// trackWriter is the session's pacer writing to the browser's track: the
// peer connection rewrites the SSRC and payload type it negotiated and
// protects the packet (SRTP).
type trackWriter struct{ t *webrtc.TrackLocalStaticRTP }

func (w trackWriter) WriteRTP(h *rtp.Header, payload []byte) error {
	return w.t.WriteRTP(&rtp.Packet{Header: *h, Payload: payload})
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
	l.applyHold()
	ev := l.log.Info().Str("codec", l.codec.params.MimeType)
	if sess := l.session(); sess != nil { // a joined leg starts once connected
		ev = ev.Str("chain", sess.String())
	}
	ev.Msg("browser connected")
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

// Hold stops (on) or resumes sending audio.
func (l *Leg) Hold(on bool) {
	l.mu.Lock()
	l.held = on
	l.mu.Unlock()
	l.applyHold()
}

// applyHold sends once the browser is connected, unless held.
func (l *Leg) applyHold() {
	l.mu.Lock()
	sess, send := l.sess, l.answered && !l.held
	l.mu.Unlock()
	if sess == nil {
		return
	}
	if send {
		sess.Resume()
	} else {
		sess.Hold()
	}
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
	if sess := l.session(); sess != nil {
		err = errors.Join(err, sess.Close())
	}
	return err
}

// readTrack hands the browser's packets to the media session (its own
// goroutine): the session's jitter buffer, decoder and listeners take it
// from there, as for a phone's RTP.
func (l *Leg) readTrack(tr *webrtc.TrackRemote) {
	l.log.Debug().Str("codec", tr.Codec().MimeType).Msg("browser audio track")
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		if sess := l.session(); sess != nil {
			sess.Receive(pkt, time.Now())
		}
	}
}

// Stats are the leg's RTP figures, with the round trip and the loss the
// browser reports (RTCP, read from the peer connection at most once a
// second).
func (l *Leg) Stats() sbmedia.StatsSnapshot {
	sess := l.session()
	if sess == nil {
		return sbmedia.StatsSnapshot{}
	}
	st := sess.Stats()
	if now := time.Now().UnixNano(); now-l.measureAt.Load() >= int64(measureEvery) {
		l.measureAt.Store(now)
		l.measure()
	}
	if m := l.measured.Load(); m != nil {
		st.RTT, st.RemoteLost, st.RemoteFractionLost = m.rtt, m.remoteLost, m.remoteFraction
	}
	return st
}

// measure keeps what the peer connection measured from the browser's
// receiver reports: the round trip and its loss.
func (l *Leg) measure() {
	if l.ctx.Err() != nil {
		return
	}
	m := &measures{}
	for _, st := range l.pc.GetStats() {
		if v, ok := st.(webrtc.RemoteInboundRTPStreamStats); ok {
			m.rtt = time.Duration(v.RoundTripTime * float64(time.Second))
			m.remoteLost = int64(v.PacketsLost)
			m.remoteFraction = v.FractionLost
		}
	}
	l.measured.Store(m)
}
