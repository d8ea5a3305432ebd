package rtc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"

	"switchboard/call"
	"switchboard/realtime"
)

// Runner runs a call on a leg until it ends (call.Manager).
type Runner interface {
	Run(ctx context.Context, leg call.Leg, log zerolog.Logger)
}

// Channels opens the event channel of a routed call by its id: the
// session a browser's "oai-events" data channel speaks to
// (conversation.Registry).
type Channels interface {
	Channel(callID string) (realtime.Session, error)
}

// Defaults of Options.
const (
	// DefaultConnectTimeout bounds ICE and DTLS after the answer: a browser
	// on a working path connects in well under a second; past this the
	// path is blocked (a firewall, a wrong public address).
	DefaultConnectTimeout = 10 * time.Second
	// DefaultAnswerWait bounds how long Call waits for the call's
	// conversation to be ready (an agent's session, a direct session's
	// model) before it gives up on the request.
	DefaultAnswerWait = 30 * time.Second
	// opusBitrate is a wideband voice bitrate: 24 kHz speech sounds clean
	// at 32 kb/s, and a browser's decoder takes anything.
	opusBitrate = 32000
)

// Options configure a Server.
type Options struct {
	// BindIP limits ICE host candidates to this address (an unspecified
	// address gathers every interface's).
	BindIP netip.Addr
	// PublicIP, when set, replaces the host candidates' address in the
	// answer (a 1:1 NAT in front of the appliance).
	PublicIP netip.Addr
	// PortMin and PortMax bound the UDP ports ICE uses (0: any).
	PortMin, PortMax uint16
	// ConnectTimeout bounds ICE and DTLS after the answer (default 10 s).
	ConnectTimeout time.Duration
	// AnswerWait bounds the wait for the conversation (default 30 s).
	AnswerWait time.Duration
	// Metrics count offers and time connections (nil: unregistered).
	Metrics *Metrics
}

// Server places browser calls on a Runner.
type Server struct {
	opts     Options
	settings webrtc.SettingEngine
	runner   Runner
	channels Channels
	log      zerolog.Logger

	mu     sync.Mutex
	legs   map[string]*Leg
	closed bool
	wg     sync.WaitGroup
}

// Errors of Call that are the caller's fault (HTTP 400).
var (
	// ErrBadOffer means the SDP offer could not be used.
	ErrBadOffer = errors.New("rtc: bad SDP offer")
	// ErrClosed means the server is shutting down.
	ErrClosed = errors.New("rtc: server closed")
)

// NewServer returns a server of browser calls run by runner.
func NewServer(opts Options, runner Runner, channels Channels, log zerolog.Logger) (*Server, error) {
	if runner == nil || channels == nil {
		return nil, errors.New("rtc: a runner and channels are required")
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.AnswerWait <= 0 {
		opts.AnswerWait = DefaultAnswerWait
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	var se webrtc.SettingEngine
	se.LoggerFactory = pionLogs{log}
	if opts.PortMin != 0 || opts.PortMax != 0 {
		if err := se.SetEphemeralUDPPortRange(opts.PortMin, opts.PortMax); err != nil {
			return nil, fmt.Errorf("rtc: port range: %w", err)
		}
	}
	// Only UDP host candidates: no mDNS (no multicast queries, no .local
	// names), no STUN, no TCP.
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	if opts.BindIP.IsValid() && !opts.BindIP.IsUnspecified() {
		bind := opts.BindIP
		se.SetIPFilter(func(ip net.IP) bool {
			a, ok := netip.AddrFromSlice(ip)
			return ok && a.Unmap() == bind
		})
		if bind.IsLoopback() {
			se.SetIncludeLoopbackCandidate(true)
		}
	}
	if opts.PublicIP.IsValid() {
		if err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{External: []string{opts.PublicIP.String()},
			AsCandidateType: webrtc.ICECandidateTypeHost, Mode: webrtc.ICEAddressRewriteReplace}); err != nil {
			return nil, fmt.Errorf("rtc: public address: %w", err)
		}
	}
	// A browser that goes away without closing is noticed within seconds.
	se.SetICETimeouts(5*time.Second, 10*time.Second, 2*time.Second)
	return &Server{opts: opts, settings: se, runner: runner, channels: channels, log: log, legs: map[string]*Leg{}}, nil
}

// CallOptions shape one browser call's event channel.
type CallOptions struct {
	// Guard checks each client event from the browser before the session
	// sees it; an event it refuses is answered with its error event and
	// dropped (the credential's model policy on session.update).
	Guard func(realtime.Event) *realtime.ErrorDetail
	// Observe sees each server event of the session (token metering).
	Observe func(realtime.Event)
}

// Answer is an answered browser call.
type Answer struct {
	// CallID is the call's id (the Location of the answer).
	CallID string
	// SDP is the answer.
	SDP string
}

// Call places a browser call: it negotiates offer, runs the call on the
// runner under route, and returns the SDP answer once the call's
// conversation is ready. A refusal is a *call.RejectError (SIP status);
// an unusable offer wraps ErrBadOffer.
func (s *Server) Call(ctx context.Context, offer string, route call.Route, info call.LegInfo, opts CallOptions, log zerolog.Logger) (Answer, error) {
	codec, err := chooseCodec(offer)
	if err != nil {
		s.opts.Metrics.offer(offerBad)
		return Answer{}, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return Answer{}, ErrClosed
	}
	info.Kind, info.Route = "webrtc", route
	if info.Received.IsZero() {
		info.Received = time.Now()
	}
	l, err := newLeg(s, codec, offer, info, opts, log)
	if err != nil {
		if errors.Is(err, ErrBadOffer) {
			s.opts.Metrics.offer(offerBad)
		}
		return Answer{}, err
	}
	log = l.log
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.Close()
		return Answer{}, ErrClosed
	}
	s.legs[l.id] = l
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.legs, l.id)
			s.mu.Unlock()
		}()
		s.runner.Run(l.ctx, l, log)
	}()
	wait := time.NewTimer(s.opts.AnswerWait)
	defer wait.Stop()
	select {
	case r := <-l.result:
		if r.err != nil {
			s.opts.Metrics.offer(offerRefused)
			return Answer{}, r.err
		}
		return Answer{CallID: l.id, SDP: r.sdp}, nil
	case <-ctx.Done():
		l.cancel(errors.New("the browser's request ended before the answer"))
		return Answer{}, ctx.Err()
	case <-wait.C:
		s.opts.Metrics.offer(offerRefused)
		l.cancel(errors.New("no answer in time"))
		return Answer{}, &call.RejectError{Status: 504, Reason: "Gateway Timeout", Err: errors.New("the call was not answered in time")}
	}
}

// Close hangs up every browser call and waits for them. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	legs := make([]*Leg, 0, len(s.legs))
	for _, l := range s.legs {
		legs = append(legs, l)
	}
	s.mu.Unlock()
	for _, l := range legs {
		l.cancel(errors.New("appliance shutting down"))
	}
	s.wg.Wait()
	return nil
}

// Active is the number of browser calls in progress.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.legs)
}

// codec is the audio codec of a browser leg.
type codec struct {
	params webrtc.RTPCodecParameters
	opus   bool
}

// The codecs a browser leg speaks, in order of preference.
var (
	codecOpus = codec{opus: true, params: webrtc.RTPCodecParameters{PayloadType: 111,
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"}}}
	codecPCMU = codec{params: webrtc.RTPCodecParameters{PayloadType: 0,
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000, Channels: 1}}}
)

// maxOfferBytes bounds an SDP offer: a browser's is a few kilobytes.
const maxOfferBytes = 64 << 10

// chooseCodec reads the offer's audio section: Opus when offered, else
// PCMU; the call's leg registers only that one, so the answer names one
// codec and the browser sends nothing else.
func chooseCodec(offer string) (codec, error) {
	if len(offer) > maxOfferBytes {
		return codec{}, fmt.Errorf("%w: larger than %d bytes", ErrBadOffer, maxOfferBytes)
	}
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(offer); err != nil {
		return codec{}, fmt.Errorf("%w: %w", ErrBadOffer, err)
	}
	var audio *sdp.MediaDescription
	for _, m := range sd.MediaDescriptions {
		if m.MediaName.Media == "audio" {
			audio = m
			break
		}
	}
	if audio == nil {
		return codec{}, fmt.Errorf("%w: no audio section (m=audio)", ErrBadOffer)
	}
	var hasOpus, hasPCMU bool
	for _, a := range audio.Attributes {
		if a.Key != "rtpmap" {
			continue
		}
		_, enc, _ := strings.Cut(a.Value, " ")
		switch name, _, _ := strings.Cut(strings.ToLower(enc), "/"); name {
		case "opus":
			hasOpus = true
		case "pcmu":
			hasPCMU = true
		}
	}
	// PCMU's static payload type 0 needs no rtpmap.
	for _, f := range audio.MediaName.Formats {
		if f == "0" {
			hasPCMU = true
		}
	}
	switch {
	case hasOpus:
		return codecOpus, nil
	case hasPCMU:
		return codecPCMU, nil
	}
	return codec{}, fmt.Errorf("%w: the audio section offers neither Opus nor PCMU", ErrBadOffer)
}
