package media

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var loopback = netip.MustParseAddr("127.0.0.1")

func newPool(t *testing.T) *PortPool {
	t.Helper()
	base := freeRange(t, 12)
	pool, err := NewPortPool(loopback, base, base+11)
	require.NoError(t, err)
	return pool
}

func newSession(t *testing.T, pool *PortPool, opts SessionOptions) *Session {
	t.Helper()
	pair, err := pool.Allocate()
	require.NoError(t, err)
	s, err := NewSession(pair, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func addr(port int) netip.AddrPort { return netip.AddrPortFrom(loopback, uint16(port)) }

// statusTap remembers the status of the last inbound frame: the tap sees
// each frame just before the session's listeners do.
type statusTap struct {
	inner Tap
	mu    sync.Mutex
	st    FrameStatus
}

func (s *statusTap) Inbound(f Frame) {
	s.mu.Lock()
	s.st = f.Status
	s.mu.Unlock()
	if s.inner != nil {
		s.inner.Inbound(f)
	}
}

func (s *statusTap) Outbound(f Frame) {
	if s.inner != nil {
		s.inner.Outbound(f)
	}
}

func (s *statusTap) last() FrameStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// newListeningSession starts a session whose inbound audio goes to
// onAudio as samples at rate, with each frame's status.
func newListeningSession(t *testing.T, pool *PortPool, opts SessionOptions, rate int, onAudio func([]int16, FrameStatus)) *Session {
	t.Helper()
	st := &statusTap{inner: opts.Tap}
	opts.Tap = st
	s := newSession(t, pool, opts)
	_, err := s.ListenPCM(rate, func(pcm []int16) { onAudio(pcm, st.last()) })
	require.NoError(t, err)
	return s
}

// audioSink collects inbound frames.
type audioSink struct {
	mu     sync.Mutex
	played int
	energy float64
}

func (a *audioSink) onAudio(pcm []int16, st FrameStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if st == FramePlayed {
		a.played++
		a.energy += rms(pcm)
	}
}

func (a *audioSink) get() (int, float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.played, a.energy
}

func TestSessionsTalk(t *testing.T) {
	pool := newPool(t)
	var sinkB audioSink
	a := newSession(t, pool, SessionOptions{RTCPInterval: 100 * time.Millisecond})
	b := newListeningSession(t, pool, SessionOptions{Codec: PCMA, RTCPInterval: 100 * time.Millisecond}, 8000, sinkB.onAudio)
	a.SetRemote(addr(b.LocalPort()))
	b.SetRemote(addr(a.LocalPort()))
	a.Playout().Write("item_a", tone(440, 8000, 4000, 10000)) // 500 ms

	require.Eventually(t, func() bool {
		n, e := sinkB.get()
		return n >= 20 && e > 0
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		sa, sb := a.Stats(), b.Stats()
		return sa.RTCPIn > 0 && sb.RTCPIn > 0 && sa.RTCPOut > 0 && sb.RTCPOut > 0 &&
			sa.PacketsIn > 0 && sb.PacketsIn > 0
	}, 5*time.Second, 10*time.Millisecond)
	sb := b.Stats()
	require.Less(t, sb.Late, sb.PacketsIn/2, "late packets only from scheduling hiccups of a loaded machine")
	require.GreaterOrEqual(t, sb.Expected, sb.PacketsIn-1)
	require.Less(t, sb.Jitter, 50*time.Millisecond)
	require.Contains(t, a.String(), "RTP -> Jitter(40ms PCMU) | Playout(PCMU)")
	require.Contains(t, b.String(), "Jitter(40ms PCMA) => [PCMA(decode) -> PCM(8k)] | Playout(PCMA)")
	require.Contains(t, b.String(), "Pacer(PCMA 20ms)")
	// A's packets are G.711 from A's pacer; B reported on them by RTCP, so
	// A learned a round-trip time (tiny on loopback) and no loss.
	require.Eventually(t, func() bool {
		sa := a.Stats()
		return sa.RemoteJitter >= 0 && sa.RemoteFractionLost == 0 && sa.RTT < time.Second
	}, 3*time.Second, 20*time.Millisecond)
}

func TestSessionSymmetricLatching(t *testing.T) {
	pool := newPool(t)
	b := newSession(t, pool, SessionOptions{RelatchAfter: 100 * time.Millisecond}) // no remote from SDP
	require.False(t, b.Remote().IsValid())

	peer1, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr(0)))
	require.NoError(t, err)
	defer peer1.Close()
	peer2, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr(0)))
	require.NoError(t, err)
	defer peer2.Close()

	send := func(c *net.UDPConn, seq uint16) {
		raw, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: seq, Timestamp: uint32(seq) * 160, SSRC: 7},
			Payload: make([]byte, 160)}).Marshal()
		require.NoError(t, err)
		_, err = c.WriteToUDPAddrPort(raw, addr(b.LocalPort()))
		require.NoError(t, err)
	}
	recv := func(c *net.UDPConn) rtp.Packet {
		buf := make([]byte, 1500)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
		n, err := c.Read(buf)
		require.NoError(t, err)
		var p rtp.Packet
		require.NoError(t, p.Unmarshal(buf[:n]))
		return p
	}
	send(peer1, 1)
	p := recv(peer1)
	require.Equal(t, uint8(0), p.PayloadType)
	require.Equal(t, peer1.LocalAddr().(*net.UDPAddr).AddrPort(), b.Remote())

	// The peer's source port changes (NAT rebinding): once the old one
	// fell silent, B follows the same stream to its new source.
	// The new source sends until the old one was silent past RelatchAfter
	// on the session's clock (TestSourceLatch injects the latch's).
	seq := uint16(2)
	require.Eventually(t, func() bool {
		send(peer2, seq)
		seq++
		return b.Remote() == peer2.LocalAddr().(*net.UDPAddr).AddrPort()
	}, 2*time.Second, 20*time.Millisecond)
	p = recv(peer2)
	require.Equal(t, uint32(b.Pacer().SSRC()), p.SSRC)
	require.Equal(t, uint64(2), b.Stats().Latches)
}

// TestSessionNoLatchOnPortZero: a packet whose UDP source port is 0 cannot
// be answered; from the SDP's host it latches the SDP's address, from
// another host it is a stranger's.
func TestSessionNoLatchOnPortZero(t *testing.T) {
	pool := newPool(t)
	b := newSession(t, pool, SessionOptions{})
	b.SetRemote(addr(40000))
	p := &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: 1, Timestamp: 160, SSRC: 7}, Payload: make([]byte, 160)}
	b.handleRTP(p, addr(0), 172, time.Now())
	require.Equal(t, addr(40000), b.Remote())
	require.Equal(t, uint64(1), b.Stats().Latches)
	require.Equal(t, uint64(1), b.Stats().PacketsIn)
	p.SequenceNumber, p.Timestamp = 2, 320
	b.handleRTP(p, addr(0), 172, time.Now())
	require.Equal(t, uint64(2), b.Stats().PacketsIn)
	b.handleRTP(p, netip.MustParseAddrPort("127.0.0.2:0"), 172, time.Now())
	require.Equal(t, addr(40000), b.Remote())
	require.Equal(t, uint64(2), b.Stats().PacketsIn)
	require.Equal(t, uint64(1), b.Stats().Strangers)
}

func TestSessionEventsAndTimeout(t *testing.T) {
	pool := newPool(t)
	var events atomic.Int32
	timedOut := make(chan error, 2)
	b := newSession(t, pool, SessionOptions{
		EventPayloadType: 96,
		MediaTimeout:     300 * time.Millisecond,
		OnEvent: func(h *rtp.Header, payload []byte) {
			if h.PayloadType == 96 && len(payload) == 4 && payload[0] == 5 {
				events.Add(1)
			}
		},
		OnTimeout: func(err error) { timedOut <- err },
	})
	peer, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr(0)))
	require.NoError(t, err)
	defer peer.Close()
	raw, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, Marker: true, SequenceNumber: 1, Timestamp: 160, SSRC: 9},
		Payload: []byte{5, 0x0a, 0, 160}}).Marshal()
	require.NoError(t, err)
	_, err = peer.WriteToUDPAddrPort(raw, addr(b.LocalPort()))
	require.NoError(t, err)
	_, err = peer.WriteToUDPAddrPort([]byte("not rtp"), addr(b.LocalPort()))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return events.Load() == 1 }, 2*time.Second, 5*time.Millisecond)

	// Nothing more arrives: the media timeout fires once.
	select {
	case err := <-timedOut:
		require.ErrorIs(t, err, ErrMediaTimeout)
	case <-time.After(3 * time.Second):
		t.Fatal("media timeout did not fire")
	}
	select {
	case <-timedOut:
		t.Fatal("media timeout fired twice")
	case <-time.After(400 * time.Millisecond):
	}
	require.Equal(t, uint64(1), b.Stats().Ignored)
}

func TestSessionCloseReleasesPorts(t *testing.T) {
	pool := newPool(t)
	pair, err := pool.Allocate()
	require.NoError(t, err)
	s, err := NewSession(pair, SessionOptions{Remote: addr(9)})
	require.NoError(t, err)
	require.NoError(t, s.SetPtime(30*time.Millisecond))
	require.Error(t, s.SetPtime(7*time.Millisecond))
	s.Hold()
	s.Resume()
	s.SetMediaTimeout(0)
	require.Equal(t, 1, pool.InUse())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.Zero(t, pool.InUse())
}
