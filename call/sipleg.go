package call

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

	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/media/opus"
	"switchboard/sip"
)

// SIPLegOptions configure the SIP/RTP legs of a Manager.
type SIPLegOptions struct {
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
	// steer a call (the Manager sets its metric).
	Strangers media.Counter
}

// noPortsRetryAfter is the Retry-After of a call refused for want of RTP
// ports: calls end every few seconds on a busy appliance.
const noPortsRetryAfter = 5 * time.Second

// SIPLeg is a Leg over a SIP dialog (package sip) and its RTP media
// (package media): the SDP-negotiated codec (G.711 at 8 kHz, G.722 at
// 16 kHz, Opus decoded at and encoded from 24 kHz), keys as RFC 4733
// events, SIP INFO or in-band tones, re-INVITE and UPDATE followed
// (address, codec, ptime, hold), REFER for transfers.
type SIPLeg struct {
	in   *sip.Call
	opts SIPLegOptions
	log  zerolog.Logger
	info LegInfo

	sink        LegSink
	passthrough bool
	passCodec   media.Codec // the conversation's G.711 when passthrough
	codec       atomic.Pointer[media.Codec]
	sess        *media.Session // set by Start
	sender      *dtmf.Sender   // nil without telephone-event
	keys        *dtmf.Sources  // set by Start

	// G.722 (a wideband call): the leg's audio is 16 kHz; the call's own
	// decoder (media goroutine) and encoder (behind encMu) code it.
	wide   bool
	dec    *media.G722Decoder
	decBuf []int16
	encMu  sync.Mutex
	enc    *media.G722Encoder
	encBuf []byte
	encOdd []int16 // a sample left over from an odd-length write

	// Opus: the session decodes to and encodes from 24 kHz with these.
	opus     bool
	opusEnc  *opus.Encoder
	opusDec  *opus.Decoder
	down     *media.Resampler // to 8 kHz for the in-band detector (wide legs)
	inbandPC []int16

	mu       sync.Mutex
	started  bool
	answered bool
	held     bool // held by the appliance (Hold)
	peerOK   bool // the peer's direction lets us receive our audio
	peerHeld bool // the peer sends nothing (inactive, recvonly)
	closed   bool

	placed bool // the appliance placed the call (NewPlacedLeg)
}

var _ Leg = (*SIPLeg)(nil)

// NewSIPLeg returns the leg of an admitted INVITE.
func NewSIPLeg(in *sip.Call, opts SIPLegOptions) *SIPLeg {
	if opts.JitterDelay == 0 {
		opts.JitterDelay = 40 * time.Millisecond
	}
	info := LegInfo{Kind: "sip", From: in.From(), To: in.To(), CallerName: in.CallerName(), RemoteID: in.SIPCallID(), Received: in.ReceivedAt()}
	for _, h := range in.Headers() {
		info.Headers = append(info.Headers, Header{Name: h.Name, Value: h.Value})
	}
	if r := in.Route(); r != nil {
		if cr, ok := r.Data.(*Route); ok && cr != nil {
			info.Route = *cr
		}
		info.Route.NumberID, info.Route.PhoneNumber = r.NumberID, r.PhoneNumber
	}
	l := &SIPLeg{in: in, opts: opts, log: in.Logger(), info: info}
	if c, ok := mediaCodec(in.Offer().Codec); ok {
		l.codec.Store(&c)
	} else {
		l.codec.Store(&media.PCMU)
	}
	l.wide = l.codec.Load().IsG722()
	l.opus = l.codec.Load().IsOpus()
	return l
}

// ID is the call id.
func (l *SIPLeg) ID() string { return l.in.ID() }

// SIP is the leg's SIP dialog.
func (l *SIPLeg) SIP() *sip.Call { return l.in }

// Info describes the caller.
func (l *SIPLeg) Info() LegInfo { return l.info }

// Context ends with the dialog.
func (l *SIPLeg) Context() context.Context { return l.in.Context() }

// Rate is the audio rate of the negotiated codec: 8 kHz for G.711,
// 16 kHz for G.722, 24 kHz for Opus (decoded at the model's rate).
func (l *SIPLeg) Rate() int {
	switch {
	case l.wide:
		return media.G722Rate
	case l.opus:
		return opusRate
	}
	return media.ClockRate
}

// Codec is the negotiated G.711 codec, EncodingPCMU or EncodingPCMA, for
// a passthrough; "" for G.722 and Opus (nothing to pass through).
func (l *SIPLeg) Codec() string {
	switch {
	case l.wide, l.opus, l.placed:
		return ""
	case l.codec.Load().PayloadType == media.PCMA.PayloadType:
		return EncodingPCMA
	}
	return EncodingPCMU
}

// Start allocates the RTP ports and starts the media, held until Answer.
func (l *SIPLeg) Start(sink LegSink, opts LegOptions) error {
	offer := l.in.Offer()
	pair, err := l.opts.Ports.Allocate()
	if err != nil {
		return &RejectError{Status: 503, Reason: "Service Unavailable", RetryAfter: noPortsRetryAfter, Err: fmt.Errorf("no RTP port: %w", err)}
	}
	l.sink, l.passthrough, l.passCodec = sink, opts.Passthrough, *l.codec.Load()
	inband := opts.Inband
	if inband == "" {
		inband = InbandAuto
	}
	// In-band detection works on 8 kHz audio: a wideband leg's audio is
	// resampled for it.
	l.keys = dtmf.NewSources(inband == InbandOn || (inband != InbandOff && offer.DTMFPayloadType == 0), sink.Key)
	if offer.DTMFClockRate != 0 {
		l.keys.SetClockRate(int(offer.DTMFClockRate))
	}
	if l.keys.Inband() && l.Rate() != media.ClockRate {
		if l.down, err = media.NewResampler(l.Rate(), media.ClockRate); err != nil {
			pair.Close()
			return err
		}
	}
	so := media.SessionOptions{
		Codec: *l.codec.Load(), Ptime: offer.Ptime, JitterDelay: l.opts.JitterDelay, EventPayloadType: offer.DTMFPayloadType,
		Remote: offer.RemoteAddr, MediaTimeout: l.opts.MediaTimeout, Logger: l.log,
		RelatchAfter: l.opts.RelatchAfter, Strangers: l.opts.Strangers, SRTP: srtpKeys(offer.SRTP),
		OnAudio: l.onAudio, OnTimeout: l.onTimeout, OnEvent: l.onEvent, Tap: opts.Tap,
	}
	switch {
	case l.opus:
		// The session keeps Opus packets, decodes them at 24 kHz (with
		// loss concealment) and encodes the 24 kHz playout.
		if err := l.openOpus(offer.Codec); err != nil {
			pair.Close()
			return err
		}
		so.Decoder, so.Encoder, so.OnAudio = l.opusDec, l.opusEnc, l.onOpus
	case l.wide:
		// The session keeps G.722's bytes (one per RTP tick, like G.711);
		// the leg decodes them in order, frame by frame, and encodes what
		// it plays.
		l.dec, l.enc = media.NewG722Decoder(), media.NewG722Encoder()
		so.Passthrough, so.OnPayload, so.OnAudio = true, l.onG722, nil
		if opts.Tap != nil {
			t, err := newG722Tap(l, opts.Tap)
			if err != nil {
				pair.Close()
				return err
			}
			so.Tap = t
		}
	case opts.Passthrough:
		// The caller's bytes go to the conversation untouched; PCM is
		// decoded only for the in-band detector.
		so.Passthrough, so.OnPayload = true, l.onPayload
		if !l.keys.Inband() {
			so.OnAudio = nil
		}
	}
	sess, err := media.NewSession(pair, so)
	if err != nil {
		pair.Close()
		l.closeOpus()
		return err
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

func (l *SIPLeg) startSender(sess *media.Session, p sip.MediaParams) {
	l.sender = dtmf.NewSender(p.DTMFPayloadType, dtmf.SendOptions{Interval: p.Ptime, ClockRate: int(p.DTMFClockRate)})
	sess.Pacer().SetEventSource(l.sender)
}

// localAddr is our RTP address for the SDP: towards the caller's media,
// or, for a delayed offer (no media address yet), towards its signalling.
func (l *SIPLeg) localAddr(sess *media.Session) netip.AddrPort {
	remote := l.in.Offer().RemoteAddr
	if !remote.IsValid() {
		remote = l.in.SourceAddr()
	}
	return netip.AddrPortFrom(answerIP(l.opts.BindIP, remote), uint16(sess.LocalPort()))
}

func (l *SIPLeg) session() *media.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess
}

// Ring sends 180 Ringing.
func (l *SIPLeg) Ring() error { return l.in.Ringing() }

// Answer sends the 200 OK with our media address, waits for the ACK and
// starts sending.
func (l *SIPLeg) Answer(ctx context.Context) error {
	sess := l.session()
	if sess == nil {
		return errors.New("sip leg: answer before start")
	}
	if err := l.in.Answer(ctx, l.localAddr(sess)); err != nil {
		return err
	}
	m := l.in.Media()
	if l.in.DelayedOffer() && m.DTMFPayloadType != 0 {
		l.startSender(sess, m)
	}
	l.mu.Lock()
	l.answered = true
	l.mu.Unlock()
	l.applyMedia(m)
	return nil
}

// Reject answers the INVITE with status (and Retry-After).
func (l *SIPLeg) Reject(status int, reason string, retryAfter time.Duration) error {
	var hs []sip.Header
	if retryAfter > 0 {
		hs = append(hs, sip.Header{Name: "Retry-After", Value: strconv.Itoa(int((retryAfter + time.Second - 1) / time.Second))})
	}
	return l.in.Reject(status, reason, hs...)
}

// Hangup sends BYE with reason and headers.
func (l *SIPLeg) Hangup(ctx context.Context, reason string, headers ...Header) error {
	return l.in.HangupWith(ctx, reason, sipHeaders(headers))
}

// Transfer sends REFER (with headers) and follows its NOTIFYs.
func (l *SIPLeg) Transfer(ctx context.Context, target string, progress func(status int), headers ...Header) error {
	return l.in.TransferWithProgress(ctx, target, "", progress, sipHeaders(headers)...)
}

// sipHeaders are hs as package sip's.
func sipHeaders(hs []Header) []sip.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]sip.Header, len(hs))
	for i, h := range hs {
		out[i] = sip.Header{Name: h.Name, Value: h.Value}
	}
	return out
}

// Play queues PCM at the leg's rate (G.722: encoded by the call's
// encoder as it is queued).
func (l *SIPLeg) Play(itemID string, pcm []int16) {
	s := l.session()
	if s == nil {
		return
	}
	if !l.wide {
		s.Playout().Write(itemID, pcm)
		return
	}
	l.encMu.Lock()
	defer l.encMu.Unlock()
	if len(l.encOdd) > 0 {
		pcm = append(l.encOdd, pcm...)
	}
	l.encBuf = l.enc.Encode(l.encBuf[:0], pcm)
	l.encOdd = append(l.encOdd[:0], pcm[len(pcm)&^1:]...)
	s.Playout().WriteCoded(itemID, media.G722, l.encBuf)
}

// PlayCoded queues G.711 bytes in the leg's codec.
func (l *SIPLeg) PlayCoded(itemID string, payload []byte) {
	s := l.session()
	if s == nil {
		return
	}
	s.Playout().WriteCoded(itemID, l.passCodec, payload)
}

// Flush drops the queued audio (barge-in).
func (l *SIPLeg) Flush() (string, int) {
	if s := l.session(); s != nil {
		return s.Playout().Flush()
	}
	return "", 0
}

// Pending is the queued audio not sent yet.
func (l *SIPLeg) Pending() time.Duration {
	if s := l.session(); s != nil {
		return s.Playout().Len()
	}
	return 0
}

// Hold stops (on) or resumes sending to the caller.
func (l *SIPLeg) Hold(on bool) {
	l.mu.Lock()
	l.held = on
	l.mu.Unlock()
	l.applyHold()
}

// applyHold sends when neither the appliance nor the peer holds the call.
func (l *SIPLeg) applyHold() {
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

// Stats are the RTP figures so far.
func (l *SIPLeg) Stats() media.StatsSnapshot {
	if s := l.session(); s != nil {
		return s.Stats()
	}
	return media.StatsSnapshot{}
}

// Close stops the media; it is idempotent.
func (l *SIPLeg) Close() error {
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
	err := sess.Close()
	l.closeOpus()
	return err
}

// onAudio runs on the media goroutine for every inbound frame.
func (l *SIPLeg) onAudio(pcm []int16, _ media.FrameStatus) {
	l.keys.Audio(pcm, time.Now())
	if !l.passthrough {
		l.sink.Audio(pcm)
	}
}

// onPayload runs on the media goroutine for every inbound frame of a
// passthrough: the bytes go to the conversation as they came.
func (l *SIPLeg) onPayload(payload []byte, _ media.FrameStatus) {
	if !l.keys.Inband() {
		l.keys.Audio(nil, time.Now()) // closes RFC 4733 events that lost their end
	}
	l.sink.Coded(payload)
}

// onEvent takes telephone-event packets (media reader goroutine).
func (l *SIPLeg) onEvent(h *rtp.Header, payload []byte) {
	if err := l.keys.RTP(h.Timestamp, payload, time.Now()); err != nil {
		l.log.Debug().Err(err).Msg("bad telephone-event packet")
	}
}

func (l *SIPLeg) onTimeout(err error) {
	l.log.Warn().Err(err).Msg("media timeout")
	l.sink.Lost("media timeout: no RTP received")
}

// watch applies re-INVITE/UPDATE changes and takes INFO keys until the
// call ends.
func (l *SIPLeg) watch() {
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
func (l *SIPLeg) applyMedia(p sip.MediaParams) {
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
	l.mu.Lock()
	changed := held != l.peerHeld
	l.peerHeld = held
	l.mu.Unlock()
	if changed {
		l.sink.PeerHold(held)
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
func (l *SIPLeg) SendDTMF(ctx context.Context, digits string) error {
	sess := l.session()
	if sess == nil {
		return ErrNotActive
	}
	var done <-chan struct{}
	if l.sender != nil {
		var err error
		if done, err = l.sender.Send(digits, nil); err != nil {
			return err
		}
	} else {
		pcm, err := dtmf.Tones(digits, l.Rate())
		if err != nil {
			return err
		}
		l.Play(dtmfItem, pcm)
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
func (l *SIPLeg) playedOut(ctx context.Context, sess *media.Session) <-chan struct{} {
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
