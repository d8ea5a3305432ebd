package call

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"github.com/rs/zerolog"

	"switchboard/media"
	"switchboard/sip"
)

// State is where a call is in its life.
type State string

// Call states.
const (
	StateRinging State = "ringing"
	StateActive  State = "active"
	StateEnded   State = "ended"
)

// Who ended a call.
const (
	EndedByCaller    = "caller"
	EndedByAppliance = "appliance"
	EndedByRejected  = "rejected"
)

// Call is one phone call. It is owned by the goroutine that took the
// INVITE; its getters are safe from any goroutine.
type Call struct {
	m   *Manager
	in  *sip.InboundCall
	id  string
	log zerolog.Logger

	sess    *media.Session
	inPipe  *media.InboundPipeline
	inBuf   []byte
	outPipe *media.OutboundPipeline
	rate    int // the conversation's audio rate
	conv    atomic.Pointer[convHolder]
	keypad  atomic.Pointer[keypad]
	sender  *dtmfSender

	started time.Time

	mu         sync.Mutex
	state      State
	answered   time.Time
	ended      time.Time
	endedBy    string
	endReason  string
	finalStats media.StatsSnapshot
	notes      []Note
	route      string
	inband     Inband
}

type convHolder struct{ c Conversation }

func newCall(m *Manager, in *sip.InboundCall) *Call {
	started := in.ReceivedAt()
	if started.IsZero() {
		started = time.Now()
	}
	return &Call{m: m, in: in, id: in.ID(), log: in.Logger(), started: started, state: StateRinging}
}

// ID is the call id (a UUID).
func (c *Call) ID() string { return c.id }

// SIP is the call's SIP side.
func (c *Call) SIP() *sip.InboundCall { return c.in }

// Logger is the call's logger (with call_id).
func (c *Call) Logger() zerolog.Logger { return c.log }

// Snapshot is a consistent view of a call for the API and call records.
type Snapshot struct {
	ID          string
	NumberID    string
	PhoneNumber string
	From, To    string
	SIPCallID   string
	State       State
	Started     time.Time
	Answered    time.Time
	Ended       time.Time
	EndedBy     string
	EndReason   string
	// Route is "agent:<id>", "webhook:<id>" or "echo".
	Route string
	Media media.StatsSnapshot
	Notes []Note
}

// Snapshot returns the call's current view.
func (c *Call) Snapshot() Snapshot {
	c.mu.Lock()
	s := Snapshot{ID: c.id, From: c.in.From(), To: c.in.To(), SIPCallID: c.in.SIPCallID(), State: c.state,
		Started: c.started, Answered: c.answered, Ended: c.ended, EndedBy: c.endedBy, EndReason: c.endReason, Media: c.finalStats,
		Route: c.route, Notes: append([]Note(nil), c.notes...)}
	sess := c.sess
	c.mu.Unlock()
	if r := c.in.Route(); r != nil {
		s.NumberID, s.PhoneNumber = r.NumberID, r.PhoneNumber
	}
	if sess != nil && s.State != StateEnded {
		s.Media = sess.Stats()
	}
	return s
}

// SetRoute names where the router sent the call, for the call record.
func (c *Call) SetRoute(route string) {
	c.mu.Lock()
	c.route = route
	c.mu.Unlock()
}

// Note adds an entry to the call record.
func (c *Call) Note(n Note) {
	if n.At.IsZero() {
		n.At = time.Now()
	}
	c.mu.Lock()
	c.notes = append(c.notes, n)
	c.mu.Unlock()
}

func (c *Call) setEnd(by, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endedBy == "" {
		c.endedBy, c.endReason = by, reason
	}
}

// run drives the call: media, ringing, the conversation's preparation,
// answer, the conversation, and the teardown.
func (c *Call) run(ctx context.Context) {
	opts := c.m.opts
	defer c.teardown()
	offer := c.in.Offer()
	pair, err := opts.Ports.Allocate()
	if err != nil {
		c.log.Error().Err(err).Msg("no RTP port for the call")
		c.reject(503, "Service Unavailable", "no media ports", sip.Header{Name: "Retry-After", Value: "5"})
		return
	}
	codec, ok := media.CodecByPayloadType(offer.Codec.PayloadType)
	if !ok {
		codec = media.PCMU
	}
	sess, err := media.NewSession(pair, media.SessionOptions{
		Codec: codec, Ptime: offer.Ptime, JitterDelay: opts.JitterDelay, EventPayloadType: offer.DTMFPayloadType,
		Remote: offer.RemoteAddr, MediaTimeout: opts.MediaTimeout, Logger: c.log,
		OnAudio: c.onAudio, OnTimeout: c.onMediaTimeout, OnEvent: c.onEvent,
	})
	if err != nil {
		pair.Close()
		c.reject(500, "Server Internal Error", err.Error())
		return
	}
	c.mu.Lock()
	c.sess = sess
	c.mu.Unlock()
	c.applyMedia(offer)
	// Nothing is sent before the answer: the caller learns our media
	// address from the 200 OK (no early media).
	sess.Hold()
	if err := c.in.Ringing(); err != nil {
		c.log.Debug().Err(err).Msg("180 not sent")
	}

	conv, err := opts.Router.Conversation(ctx, c)
	if err != nil {
		var re *RejectError
		if errors.As(err, &re) {
			c.reject(re.Status, re.Reason, err.Error())
		} else {
			c.reject(500, "Server Internal Error", err.Error())
		}
		return
	}
	defer conv.Close()
	c.rate = opts.Rate
	if r, ok := conv.(interface{ AudioRate() int }); ok && r.AudioRate() > 0 {
		c.rate = r.AudioRate()
	}
	if c.inPipe, err = media.NewInboundPipeline(c.rate); err == nil {
		c.outPipe, err = media.NewOutboundPipeline(c.rate, sess.Playout())
	}
	if err != nil {
		c.reject(500, "Server Internal Error", err.Error())
		return
	}
	c.log.Debug().Str("media", offer.String()).Str("in", codec.Name+"(decode) -> Jitter -> "+c.inPipe.String()).
		Str("out", c.outPipe.String()+" -> "+sess.Pacer().String()).Msg("media ready")
	kp, err := newKeypad(c, conv, offer, opts.DTMFIdle, opts.Inband)
	if err != nil {
		c.reject(500, "Server Internal Error", err.Error())
		return
	}
	c.keypad.Store(kp)
	defer kp.close()
	if offer.DTMFPayloadType != 0 {
		c.mu.Lock()
		c.sender = &dtmfSender{pt: offer.DTMFPayloadType}
		c.mu.Unlock()
		sess.Pacer().SetEventSource(c.sender)
	}
	pctx, cancel := context.WithTimeout(ctx, opts.AnswerTimeout)
	err = conv.Prepare(pctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			c.setEnd(EndedByCaller, "canceled while ringing")
			return
		}
		var re *RejectError
		if errors.As(err, &re) {
			c.reject(re.Status, re.Reason, err.Error())
		} else {
			c.reject(480, "Temporarily Unavailable", "conversation not ready: "+err.Error())
		}
		return
	}
	c.conv.Store(&convHolder{conv})
	if ba, ok := conv.(BeforeAnswerer); ok {
		ba.BeforeAnswer(phone{c})
	}
	// Read INFOs (and media updates) from the 200 OK on: the caller may send
	// INFO as soon as it has sent its ACK, before Answer has seen the ACK,
	// and the SIP call's queue of INFOs is short.
	go c.watchMedia(ctx)
	if err := c.in.Answer(ctx, netip.AddrPortFrom(answerIP(opts.BindIP, offer.RemoteAddr), uint16(sess.LocalPort()))); err != nil {
		c.setEnd(EndedByCaller, "not answered: "+err.Error())
		return
	}
	c.mu.Lock()
	c.state, c.answered = StateActive, time.Now()
	c.mu.Unlock()
	c.applyMedia(c.in.Media())

	err = conv.Run(ctx, phone{c})
	var he *HangupError
	switch {
	case ctx.Err() != nil:
		c.setEnd(EndedByCaller, causeText(context.Cause(ctx)))
	case errors.As(err, &he):
		c.hangup(he.Reason)
	case err != nil:
		c.log.Warn().Err(err).Msg("conversation failed")
		c.hangup("conversation failed")
	default:
		c.hangup("conversation ended")
	}
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

func causeText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (c *Call) reject(status int, reason, why string, hs ...sip.Header) {
	c.setEnd(EndedByRejected, fmt.Sprintf("%d %s: %s", status, reason, why))
	if err := c.in.Reject(status, reason, hs...); err != nil {
		c.log.Debug().Err(err).Msg("reject")
	}
}

// Hangup ends the call from the appliance's side (an API request): BYE
// with reason, and the call record says the appliance ended it.
func (c *Call) Hangup(reason string) { c.hangup(reason) }

// hangup sends BYE with reason (once) and marks the appliance as the one
// who ended the call.
func (c *Call) hangup(reason string) {
	c.setEnd(EndedByAppliance, reason)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.in.Hangup(ctx, reason); err != nil {
		c.log.Debug().Err(err).Msg("hangup")
	}
}

// teardown runs once the call is over: it stops the media and records the
// final figures.
func (c *Call) teardown() {
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	var st media.StatsSnapshot
	if sess != nil {
		st = sess.Stats()
		if err := sess.Close(); err != nil {
			c.log.Debug().Err(err).Msg("close media")
		}
	}
	if c.in.Context().Err() == nil {
		c.hangup("call ended")
	}
	c.mu.Lock()
	c.state, c.ended, c.finalStats = StateEnded, time.Now(), st
	if c.endedBy == "" {
		c.endedBy, c.endReason = EndedByCaller, causeText(context.Cause(c.in.Context()))
	}
	answered, by := c.answered, c.endedBy
	c.mu.Unlock()
	var dur float64
	if !answered.IsZero() {
		dur = time.Since(answered).Seconds()
	}
	c.m.opts.Metrics.callEnded(by, dur, st)
	ev := c.log.Info().Str("ended_by", by).Uint64("rtp_in", st.PacketsIn).Uint64("rtp_out", st.PacketsOut).
		Int64("rtp_lost", st.Lost).Uint64("late_frames", st.Late).Dur("jitter", st.Jitter)
	if dur > 0 {
		ev = ev.Float64("duration_s", dur)
	}
	ev.Msg("call ended")
}

// onAudio runs on the media goroutine for every inbound frame.
func (c *Call) onAudio(pcm []int16, _ media.FrameStatus) {
	if k := c.keypad.Load(); k != nil {
		k.audio(pcm)
	}
	h := c.conv.Load()
	if h == nil {
		return
	}
	c.inBuf = c.inPipe.Process(c.inBuf[:0], pcm)
	h.c.Audio(c.inBuf)
}

// onEvent takes telephone-event packets (media reader goroutine).
func (c *Call) onEvent(h *rtp.Header, payload []byte) {
	if k := c.keypad.Load(); k != nil {
		k.rtpEvent(h, payload)
	}
}

func (c *Call) onMediaTimeout(err error) {
	c.log.Warn().Err(err).Msg("media timeout")
	go c.hangup("media timeout: no RTP received")
}

// watchMedia applies re-INVITE/UPDATE changes until the call ends.
func (c *Call) watchMedia(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-c.in.MediaUpdates():
			c.log.Info().Str("media", p.String()).Msg("media updated")
			c.applyMedia(p)
		case in := <-c.in.Infos():
			if k := c.keypad.Load(); k != nil {
				k.info(in)
			}
		}
	}
}

// applyMedia follows the peer's media: address, codec, ptime and hold.
func (c *Call) applyMedia(p sip.MediaParams) {
	if p.RemoteAddr.IsValid() && !p.RemoteAddr.Addr().IsUnspecified() {
		c.sess.SetRemote(p.RemoteAddr)
	}
	if codec, ok := media.CodecByPayloadType(p.Codec.PayloadType); ok {
		c.sess.SetCodec(codec)
	}
	if p.Ptime > 0 {
		if err := c.sess.SetPtime(p.Ptime); err != nil {
			c.log.Warn().Err(err).Msg("ptime not applied")
		}
	}
	if p.CanSend() {
		c.sess.Resume()
	} else {
		c.sess.Hold()
	}
	// A peer that sends nothing (inactive, or recvonly) is not timed out.
	if p.Direction == sip.Inactive || p.Direction == sip.RecvOnly {
		c.sess.SetMediaTimeout(0)
	} else {
		c.sess.SetMediaTimeout(c.m.opts.MediaTimeout)
	}
}

// phone is the Phone a conversation gets.
type phone struct{ c *Call }

func (p phone) ID() string { return p.c.id }
func (p phone) Rate() int  { return p.c.rate }

func (p phone) Play(itemID string, pcm []byte) { p.c.outPipe.Write(itemID, pcm) }

func (p phone) Flush() (string, int) {
	item, ms := p.c.sess.Playout().Flush()
	p.c.outPipe.Reset()
	return item, ms
}

func (p phone) Pending() time.Duration { return p.c.sess.Playout().Len() }

func (p phone) Hangup(reason string) { go p.c.hangup(reason) }

func (p phone) Note(n Note) { p.c.Note(n) }

func (p phone) SpeechStarted() {
	if k := p.c.keypad.Load(); k != nil {
		k.speechStarted()
	}
}

func (p phone) SendDTMF(ctx context.Context, digits string) error { return p.c.SendDTMF(ctx, digits) }

func (p phone) Transfer(ctx context.Context, target string) error {
	return p.c.in.Transfer(ctx, target, "")
}
