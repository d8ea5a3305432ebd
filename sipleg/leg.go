package sipleg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/sip"
)

// Options configure the SIP/RTP legs of a Handler.
type Options struct {
	// BindIP is the address RTP sockets are bound to, and the address of
	// the SDP answer unless the SIP server advertises a public one.
	BindIP netip.Addr
	// Ports is the RTP port pool.
	Ports *media.PortPool
	// JitterDelay is the jitter buffer's target delay (default 40 ms).
	JitterDelay time.Duration
	// MediaTimeout hangs up a call that received no RTP for this long
	// (0 disables it).
	MediaTimeout time.Duration
	// RelatchAfter is how long a call's latched RTP source must be silent
	// before another source with its SSRC may take over (default
	// media.DefaultRelatchAfter).
	RelatchAfter time.Duration
	// Strangers counts RTP/RTCP packets dropped from sources that may not
	// steer a call.
	Strangers media.Counter
}

// noPortsRetryAfter is the Retry-After of a call refused for want of RTP
// ports: calls end every few seconds on a busy appliance.
const noPortsRetryAfter = 5 * time.Second

// Leg is a call.Leg over a SIP dialog (package sip) and its RTP media (a
// media.Session): the SDP-negotiated codec (G.711, G.722, Opus; the
// session decodes and encodes it), keys as RFC 4733 events, SIP INFO or
// in-band tones, re-INVITE and UPDATE followed (address, codec, ptime,
// hold), REFER for transfers. It serves the calls the appliance answers
// and those it places (NewPlaced).
type Leg struct {
	in   *sip.Call
	opts Options
	log  zerolog.Logger
	info call.LegInfo

	sink   call.LegSink
	codec  atomic.Pointer[media.Codec]
	sess   *media.Session // set by Start
	sender *dtmf.Sender   // nil without telephone-event
	keys   *dtmf.Sources  // set by Start

	mu       sync.Mutex
	started  bool
	answered bool
	held     bool // held by the appliance (Hold)
	peerOK   bool // the peer's direction lets us receive our audio
	peerHeld bool // the peer sends nothing (inactive, recvonly)
	holding  bool // the peer holds the call (sendonly, inactive, 0.0.0.0)
	closed   bool

	placed bool // the appliance placed the call (NewPlaced)
}

var _ call.Leg = (*Leg)(nil)

// New returns the leg of an admitted INVITE.
func New(in *sip.Call, opts Options) *Leg {
	if opts.JitterDelay == 0 {
		opts.JitterDelay = 40 * time.Millisecond
	}
	info := call.LegInfo{Kind: "sip", From: in.From(), To: in.To(), CallerName: in.CallerName(), RemoteID: in.SIPCallID(), Received: in.ReceivedAt()}
	for _, h := range in.Headers() {
		info.Headers = append(info.Headers, call.Header{Name: h.Name, Value: h.Value})
	}
	if r := in.Route(); r != nil {
		if r.Call != nil {
			info.Route = *r.Call
		}
		info.Route.NumberID, info.Route.PhoneNumber = r.NumberID, r.PhoneNumber
	}
	l := &Leg{in: in, opts: opts, log: in.Logger(), info: info}
	if c, ok := mediaCodec(in.Offer().Codec); ok {
		l.codec.Store(&c)
	} else {
		l.codec.Store(&media.PCMU)
	}
	return l
}

// ID is the call id.
func (l *Leg) ID() string { return l.in.ID() }

// SIP is the leg's SIP dialog.
func (l *Leg) SIP() *sip.Call { return l.in }

// Info describes the caller.
func (l *Leg) Info() call.LegInfo { return l.info }

// Context ends with the dialog.
func (l *Leg) Context() context.Context { return l.in.Context() }

// Audio is the leg's media session (call.Audio).
func (l *Leg) Audio() call.Audio {
	if s := l.session(); s != nil {
		return s
	}
	return nil
}

// Start allocates the RTP ports and starts the media, held until Answer.
func (l *Leg) Start(sink call.LegSink, opts call.LegOptions) error {
	offer := l.in.Offer()
	pair, err := l.opts.Ports.Allocate()
	if err != nil {
		return &call.RejectError{Status: 503, Reason: "Service Unavailable", RetryAfter: noPortsRetryAfter, Err: fmt.Errorf("no RTP port: %w", err)}
	}
	l.sink = sink
	inband := opts.Inband
	if inband == "" {
		inband = call.InbandAuto
	}
	l.keys = dtmf.NewSources(inband == call.InbandOn || (inband != call.InbandOff && offer.DTMFPayloadType == 0), sink.Key)
	if offer.DTMFClockRate != 0 {
		l.keys.SetClockRate(int(offer.DTMFClockRate))
	}
	codec := *l.codec.Load()
	so := media.SessionOptions{
		// Our offer (a placed call, an INVITE without SDP) may be
		// answered with any of its codecs: the session's codec is
		// settled by the answer (Answer).
		Codec: codec, Deferred: l.in.DelayedOffer(), Rate: opts.Rate, Encoder: opusOptions(offer.Codec), Ptime: offer.Ptime, JitterDelay: l.opts.JitterDelay,
		EventPayloadType: offer.DTMFPayloadType, Remote: offer.RemoteAddr, MediaTimeout: l.opts.MediaTimeout, Logger: l.log,
		RelatchAfter: l.opts.RelatchAfter, Strangers: l.opts.Strangers, SRTP: srtpKeys(offer.SRTP),
		OnTimeout: l.onTimeout, OnEvent: l.onEvent, OnFrame: l.onFrame, Tap: opts.Tap,
	}
	sess, err := media.NewSession(pair, so)
	if err != nil {
		pair.Close()
		return err
	}
	if l.keys.Inband() {
		// In-band detection works on 8 kHz audio: the session decodes
		// (and resamples a wideband leg's audio) for it.
		if _, err := sess.ListenPCM(media.ClockRate, l.onInband); err != nil {
			_ = sess.Close()
			return err
		}
	}
	if offer.DTMFPayloadType != 0 && !l.in.DelayedOffer() {
		// A delayed offer's telephone-event is known from the answer.
		l.startSender(sess, offer)
	}
	l.mu.Lock()
	l.sess, l.started = sess, true
	l.mu.Unlock()
	l.applyMedia(offer)
	// Nothing is sent before the answer (applyHold waits for it): the
	// caller learns our media address from the 200 OK (no early media).
	// Read INFOs (and media updates) from now on: the caller may send
	// INFO as soon as it has sent its ACK, before Answer has seen the ACK,
	// and the SIP call's queue of INFOs is short.
	go l.watch()
	l.log.Debug().Str("media", offer.String()).Str("chain", sess.String()).Msg("sip leg media ready")
	if err := l.in.MediaReady(l.localAddr(sess)); err != nil {
		// The reliable 180 carrying a delayed offer's offer failed; the
		// answer will say so.
		l.log.Warn().Err(err).Msg("ringing with our offer not sent")
	}
	return nil
}

func (l *Leg) startSender(sess *media.Session, p sip.MediaParams) {
	l.sender = dtmf.NewSender(p.DTMFPayloadType, dtmf.SendOptions{Interval: p.Ptime, ClockRate: int(p.DTMFClockRate)})
	sess.Pacer().SetEventSource(l.sender)
}

// localAddr is our RTP address for the SDP: towards the caller's media,
// or, for a delayed offer (no media address yet), towards its signalling.
func (l *Leg) localAddr(sess *media.Session) netip.AddrPort {
	remote := l.in.Offer().RemoteAddr
	if !remote.IsValid() {
		remote = l.in.SourceAddr()
	}
	return netip.AddrPortFrom(answerIP(l.opts.BindIP, remote), uint16(sess.LocalPort()))
}

func (l *Leg) session() *media.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess
}

// Ring sends 180 Ringing.
func (l *Leg) Ring() error { return l.in.Ringing() }

// Answer sends the 200 OK with our media address, waits for the ACK and
// starts sending.
func (l *Leg) Answer(ctx context.Context) error {
	sess := l.session()
	if sess == nil {
		return errors.New("sip leg: answer before start")
	}
	if err := l.in.Answer(ctx, l.localAddr(sess)); err != nil {
		if l.placed {
			return dialError(err)
		}
		return err
	}
	m := l.in.Media()
	if l.in.DelayedOffer() {
		if err := l.settle(sess, m.Codec); err != nil {
			_ = l.in.Hangup(context.Background(), "media not started")
			if l.placed {
				return dialError(err)
			}
			return err
		}
		if m.DTMFPayloadType != 0 {
			l.startSender(sess, m)
		}
	}
	l.mu.Lock()
	l.answered = true
	l.mu.Unlock()
	l.applyMedia(m)
	return nil
}

// settle puts the codec the answer to our offer chose on the session.
func (l *Leg) settle(sess *media.Session, c sip.Codec) error {
	codec, ok := mediaCodec(c)
	if !ok {
		return fmt.Errorf("sip leg: answered codec %s has no media codec", c.Name)
	}
	if err := sess.SettleCodec(codec, opusOptions(c)); err != nil {
		return fmt.Errorf("sip leg: %w", err)
	}
	l.codec.Store(&codec)
	l.log.Debug().Str("codec", codec.Name).Str("chain", sess.String()).Msg("codec settled by the answer")
	return nil
}

// Reject answers the INVITE with status (and Retry-After).
func (l *Leg) Reject(status int, reason string, retryAfter time.Duration) error {
	var hs []sip.Header
	if retryAfter > 0 {
		hs = append(hs, sip.Header{Name: "Retry-After", Value: strconv.Itoa(int((retryAfter + time.Second - 1) / time.Second))})
	}
	return l.in.Reject(status, reason, hs...)
}

// Hangup sends BYE with reason and headers.
func (l *Leg) Hangup(ctx context.Context, reason string, headers ...call.Header) error {
	return l.in.HangupWith(ctx, reason, sipHeaders(headers))
}

// Transfer sends REFER (with headers) and follows its NOTIFYs.
func (l *Leg) Transfer(ctx context.Context, target string, progress func(status int), headers ...call.Header) error {
	return l.in.TransferWithProgress(ctx, target, "", progress, sipHeaders(headers)...)
}

// sipHeaders are hs as package sip's.
func sipHeaders(hs []call.Header) []sip.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]sip.Header, len(hs))
	for i, h := range hs {
		out[i] = sip.Header{Name: h.Name, Value: h.Value}
	}
	return out
}

// Hold stops (on) or resumes sending to the caller.
func (l *Leg) Hold(on bool) {
	l.mu.Lock()
	l.held = on
	l.mu.Unlock()
	l.applyHold()
}

// applyHold sends when neither the appliance nor the peer holds the call.
func (l *Leg) applyHold() {
	l.mu.Lock()
	sess, send := l.sess, l.answered && l.peerOK && !l.held
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

// Codec is the name of the codec the leg's media uses (for a placed
// call, the one its answer chose).
func (l *Leg) Codec() string {
	if c := l.codec.Load(); c != nil {
		return c.Name
	}
	return ""
}

// Stats are the RTP figures so far.
func (l *Leg) Stats() media.StatsSnapshot {
	if s := l.session(); s != nil {
		return s.Stats()
	}
	return media.StatsSnapshot{}
}

// Close stops the media; it is idempotent.
func (l *Leg) Close() error {
	l.mu.Lock()
	sess, closed := l.sess, l.closed
	l.closed = true
	l.mu.Unlock()
	if closed || sess == nil {
		return nil
	}
	if l.sender != nil {
		l.sender.Close()
	}
	return sess.Close()
}

// onInband takes the caller's audio at 8 kHz for the in-band detector
// (media goroutine).
func (l *Leg) onInband(pcm []int16) { l.keys.Audio(pcm, time.Now()) }

// onFrame closes RFC 4733 events that lost their end packets when no
// in-band detector runs (which would do it with its audio).
func (l *Leg) onFrame(at time.Time) {
	if !l.keys.Inband() {
		l.keys.Audio(nil, at)
	}
}

// onEvent takes telephone-event packets (media reader goroutine).
func (l *Leg) onEvent(h *rtp.Header, payload []byte) {
	if err := l.keys.RTP(h.Timestamp, payload, time.Now()); err != nil {
		l.log.Debug().Err(err).Msg("bad telephone-event packet")
	}
}

func (l *Leg) onTimeout(err error) {
	l.log.Warn().Err(err).Msg("media timeout")
	l.sink.Lost("media timeout: no RTP received")
}

// watch applies re-INVITE/UPDATE changes and takes INFO keys until the
// call ends.
func (l *Leg) watch() {
	ctx := l.in.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-l.in.MediaUpdates():
			l.log.Info().Str("media", p.String()).Msg("media updated")
			l.applyMedia(p)
		case <-l.in.Provisionals():
			l.sink.Ringing()
		case in := <-l.in.Infos():
			if err := l.keys.INFO(in.ContentType, in.Body, time.Now()); err != nil {
				l.log.Debug().Err(err).Str("content_type", in.ContentType).Msg("INFO without a DTMF key")
			}
		}
	}
}

// applyMedia follows the peer's media: address, codec, ptime and hold.
func (l *Leg) applyMedia(p sip.MediaParams) {
	sess := l.session()
	if p.RemoteAddr.IsValid() && !p.RemoteAddr.Addr().IsUnspecified() {
		sess.SetRemote(p.RemoteAddr)
	}
	if err := sess.SetSRTP(srtpKeys(p.SRTP)); err != nil {
		l.log.Warn().Err(err).Msg("srtp keys not applied")
	}
	// The audio rate is the call's for its whole life: the SIP side
	// keeps a re-offer to codecs of the call's rate.
	if codec, ok := mediaCodec(p.Codec); ok && codec.AudioRate() == l.codec.Load().AudioRate() {
		l.codec.Store(&codec)
		sess.SetCodec(codec)
	}
	if p.Ptime > 0 {
		if err := sess.SetPtime(p.Ptime); err != nil {
			l.log.Warn().Err(err).Msg("ptime not applied")
		} else if l.sender != nil {
			l.sender.SetInterval(p.Ptime)
		}
	}
	l.mu.Lock()
	l.peerOK = p.CanSend()
	l.mu.Unlock()
	l.applyHold()
	// A peer that sends nothing (inactive, or recvonly) is not timed out,
	// and its silence is no sign of one-way audio.
	held := p.Direction == sip.Inactive || p.Direction == sip.RecvOnly
	if held {
		sess.SetMediaTimeout(0)
	} else {
		sess.SetMediaTimeout(l.opts.MediaTimeout)
	}
	// The peer's phone holds the call when it wants nothing sent to it.
	holding := p.Direction == sip.SendOnly || p.Direction == sip.Inactive ||
		(p.RemoteAddr.IsValid() && p.RemoteAddr.Addr().IsUnspecified())
	l.mu.Lock()
	changed := held != l.peerHeld
	l.peerHeld = held
	holdChanged := holding != l.holding
	l.holding = holding
	l.mu.Unlock()
	if changed {
		l.sink.PeerHold(held)
	}
	if holdChanged {
		l.log.Info().Bool("holding", holding).Str("direction", string(p.Direction)).Msg("peer hold")
		l.sink.PeerHolding(holding)
	}
}

// srtpKeys turns the SDES of an offer/answer into the media's keys (nil:
// plain RTP).
func srtpKeys(s sip.SDES) *media.SRTPKeys {
	if !s.Active() {
		return nil
	}
	return &media.SRTPKeys{Suite: s.Suite, Local: []byte(s.Local), Remote: []byte(s.Remote)}
}

// answerIP is the address to put in the SDP answer: the bind address, or,
// when RTP listens on every address, the local address of the route
// towards the caller's media (found by connecting a UDP socket, which sends
// nothing). The SIP server replaces it with rtp.public_ip when set.
func answerIP(bind netip.Addr, remote netip.AddrPort) netip.Addr {
	if !bind.IsUnspecified() || !remote.IsValid() {
		return bind
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(remote))
	if err != nil {
		return bind
	}
	defer conn.Close()
	if la, ok := conn.LocalAddr().(*net.UDPAddr); ok {
		if ip, ok := netip.AddrFromSlice(la.IP); ok {
			return ip.Unmap()
		}
	}
	return bind
}

// SendDTMF plays digits to the caller: RFC 4733 events when the caller
// negotiated telephone-event, in-band tones otherwise. It returns once
// they are sent.
func (l *Leg) SendDTMF(ctx context.Context, digits string) error {
	sess := l.session()
	if sess == nil {
		return call.ErrNotActive
	}
	var done <-chan struct{}
	if l.sender != nil {
		var err error
		if done, err = l.sender.Send(digits, nil); err != nil {
			return err
		}
	} else {
		pcm, err := dtmf.Tones(digits, media.ClockRate)
		if err != nil {
			return err
		}
		w, err := sess.Writer(media.PCM16(media.ClockRate), media.WriterOptions{})
		if err != nil {
			return err
		}
		w.WritePCM(dtmfItem, pcm)
		done = l.playedOut(ctx, sess)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dtmfItem tags in-band tones in the playout.
const dtmfItem = "dtmf"

// playedOut closes its channel once the playout is empty (or ctx ends).
func (l *Leg) playedOut(ctx context.Context, sess *media.Session) <-chan struct{} {
	ch := make(chan struct{})
	ptime := l.in.Media().Ptime
	if ptime <= 0 {
		ptime = dtmf.DefaultSendInterval
	}
	go func() {
		defer close(ch)
		t := time.NewTicker(ptime)
		defer t.Stop()
		for sess.Playout().Len() > 0 {
			select {
			case <-ctx.Done():
				return
			case <-l.in.Context().Done():
				return
			case <-t.C:
			}
		}
	}()
	return ch
}
