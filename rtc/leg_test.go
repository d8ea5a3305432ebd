package rtc

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
	"github.com/pion/webrtc/v4"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/realtime"
)

// answerOnly runs a call the way the manager would, up to the answer: the
// browser (a bare offer) never connects, so Answer gives up after the
// connect timeout.
type answerOnly struct{ done chan error }

func (r answerOnly) Run(ctx context.Context, leg call.Leg, _ zerolog.Logger) {
	err := leg.Start(nopSink{}, call.LegOptions{})
	if err == nil {
		err = leg.Answer(ctx)
	}
	_ = leg.Close()
	r.done <- err
}

type nopSink struct{}

func (nopSink) Audio([]int16)  {}
func (nopSink) Coded([]byte)   {}
func (nopSink) Key(dtmf.Event) {}
func (nopSink) Ringing()       {}
func (nopSink) Lost(string)    {}
func (nopSink) PeerHold(bool)  {}

func (nopSink) PeerHolding(bool) {}

type noChannels struct{}

func (noChannels) Channel(string) (realtime.Session, error) { return nil, errors.New("no channel") }

// browserOffer is a complete offer from a pion peer on loopback (Opus,
// PCMU, the data channel), as a browser would send, and the peer's close.
func browserOffer(t *testing.T) (string, func()) {
	t.Helper()
	me := &webrtc.MediaEngine{}
	require.NoError(t, me.RegisterDefaultCodecs())
	var se webrtc.SettingEngine
	quiet := logging.NewDefaultLoggerFactory()
	quiet.DefaultLogLevel = logging.LogLevelDisabled
	se.LoggerFactory = quiet
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	require.NoError(t, err)
	tr, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "a", "b")
	require.NoError(t, err)
	_, err = pc.AddTrack(tr)
	require.NoError(t, err)
	_, err = pc.CreateDataChannel(EventsLabel, nil)
	require.NoError(t, err)
	offer, err := pc.CreateOffer(nil)
	require.NoError(t, err)
	done := webrtc.GatheringCompletePromise(pc)
	require.NoError(t, pc.SetLocalDescription(offer))
	<-done
	return pc.LocalDescription().SDP, func() { _ = pc.Close() }
}

var candidateRE = regexp.MustCompile(`(?m)^a=candidate:\S+ \d+ udp \d+ (\S+) (\d+) typ host`)

// TestAnswerCandidates: the answer carries host candidates with the public
// address (a 1:1 NAT) in place of the bind address, on ports of the
// configured range; a browser that never connects ends the call after
// the connect timeout and leaves nothing running.
func TestAnswerCandidates(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	offer, closeBrowser := browserOffer(t)
	defer closeBrowser()
	run := answerOnly{done: make(chan error, 1)}
	s, err := NewServer(Options{BindIP: netip.MustParseAddr("127.0.0.1"), PublicIP: netip.MustParseAddr("203.0.113.7"),
		PortMin: 40100, PortMax: 40119, ConnectTimeout: 300 * time.Millisecond}, run, noChannels{}, zerolog.Nop())
	require.NoError(t, err)
	ans, err := s.Call(context.Background(), offer, call.Route{AgentID: "ag_x"}, call.LegInfo{}, CallOptions{}, zerolog.Nop())
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f-]{36}$`, ans.CallID)
	cands := candidateRE.FindAllStringSubmatch(ans.SDP, -1)
	require.NotEmpty(t, cands, ans.SDP)
	for _, c := range cands {
		require.Equal(t, "203.0.113.7", c[1], "the public address replaces the host's")
		port, _ := strconv.Atoi(c[2])
		require.GreaterOrEqual(t, port, 40100)
		require.LessOrEqual(t, port, 40119)
	}
	require.Contains(t, ans.SDP, "a=setup:", "DTLS role")
	require.Contains(t, ans.SDP, "a=fingerprint:sha-256")
	require.Contains(t, ans.SDP, "opus/48000/2")
	select {
	case err := <-run.done:
		require.ErrorContains(t, err, "did not connect")
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end")
	}
	require.Zero(t, s.Active())
	require.NoError(t, s.Close())
}

// TestBadOfferLeavesNothing: an offer pion cannot apply is ErrBadOffer and
// no call runs.
func TestBadOfferLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	run := answerOnly{done: make(chan error, 1)}
	s, err := NewServer(Options{BindIP: netip.MustParseAddr("127.0.0.1")}, run, noChannels{}, zerolog.Nop())
	require.NoError(t, err)
	// Audio with Opus but no ICE credentials nor fingerprint.
	_, err = s.Call(context.Background(), offerHead+"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n", call.Route{}, call.LegInfo{}, CallOptions{}, zerolog.Nop())
	require.ErrorIs(t, err, ErrBadOffer)
	require.Zero(t, s.Active())
	require.NoError(t, s.Close())
}
