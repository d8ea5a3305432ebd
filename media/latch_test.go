package media

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// TestSourceLatch walks the latch through its rules with a fake clock.
func TestSourceLatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	caller, stranger, moved := ap("203.0.113.5:4000"), ap("198.51.100.9:5000"), ap("203.0.113.5:4100")

	t.Run("sdp address wins, strangers never", func(t *testing.T) {
		l := newSourceLatch(0, 0)
		l.signal(caller)
		require.Equal(t, latchStranger, l.check(stranger, 1, true, at(0)), "nothing sent yet")
		l.sent(at(0))
		require.Equal(t, latchStranger, l.check(stranger, 1, true, at(100)), "within the NAT grace")
		require.Equal(t, LatchSDP, l.check(caller, 7, true, at(200)))
		require.Equal(t, latchKeep, l.check(caller, 7, true, at(220)))
		for ms := 240; ms < 5000; ms += 20 { // the caller keeps talking
			require.Equal(t, latchStranger, l.check(stranger, 7, true, at(ms)), "same SSRC, caller not silent")
			require.Equal(t, latchKeep, l.check(caller, 7, true, at(ms)))
		}
		require.True(t, l.rtcpFrom(ap("203.0.113.5:4001"), 7))
		require.True(t, l.rtcpFrom(ap("203.0.113.5:61002"), 7), "a NAT picks the RTCP port")
		require.False(t, l.rtcpFrom(ap("203.0.113.5:4001"), 8), "about another stream")
		require.False(t, l.rtcpFrom(ap("198.51.100.9:4001"), 7))
	})
	t.Run("moves after silence with the same ssrc only", func(t *testing.T) {
		l := newSourceLatch(1500*time.Millisecond, 0)
		l.signal(caller)
		l.sent(at(0))
		require.Equal(t, LatchSDP, l.check(caller, 7, true, at(0)))
		require.Equal(t, latchStranger, l.check(moved, 7, true, at(1499)), "not silent long enough")
		require.Equal(t, latchStranger, l.check(stranger, 8, true, at(2000)), "silent, but another SSRC")
		require.Equal(t, LatchSilence, l.check(moved, 7, true, at(2000)))
		require.Equal(t, moved, l.current)
		require.Equal(t, latchStranger, l.check(caller, 7, true, at(2020)), "the old source is now a stranger")
	})
	t.Run("private sdp address: first sender of the payload type", func(t *testing.T) {
		for _, sdpAddr := range []string{"192.168.1.10:4000", "10.1.2.3:4000", "100.64.1.1:4000", "169.254.3.3:4000", "[fd00::1]:4000", "0.0.0.0:4000"} {
			l := newSourceLatch(0, 0)
			l.signal(ap(sdpAddr))
			require.True(t, l.natOK, sdpAddr)
			l.sent(at(0))
			require.Equal(t, latchStranger, l.check(stranger, 1, false, at(10)), "not the call's payload type")
			require.Equal(t, LatchNAT, l.check(caller, 7, true, at(20)), sdpAddr)
			require.Equal(t, latchStranger, l.check(stranger, 7, true, at(40)))
		}
	})
	t.Run("silent public sdp address: after the grace", func(t *testing.T) {
		l := newSourceLatch(0, time.Second)
		l.signal(caller)
		require.False(t, l.natOK)
		l.sent(at(0))
		require.Equal(t, latchStranger, l.check(moved, 7, true, at(999)))
		require.Equal(t, LatchNAT, l.check(moved, 7, true, at(1000)))
	})
	t.Run("signalling moves the stream", func(t *testing.T) {
		l := newSourceLatch(0, 0)
		l.signal(caller)
		l.sent(at(0))
		require.Equal(t, LatchSDP, l.check(caller, 7, true, at(0)))
		require.False(t, l.signal(caller), "the same address again keeps the latch")
		require.Equal(t, latchKeep, l.check(caller, 7, true, at(20)))
		require.True(t, l.signal(moved))
		require.Equal(t, latchStranger, l.check(caller, 7, true, at(40)), "the old address is not the new SDP's")
		require.Equal(t, LatchSDP, l.check(moved, 9, true, at(60)))
	})
	t.Run("port zero from the sdp host", func(t *testing.T) {
		l := newSourceLatch(0, 0)
		l.signal(caller)
		require.Equal(t, LatchSDP, l.check(ap("203.0.113.5:0"), 7, true, at(0)))
		require.Equal(t, caller, l.current, "answered at the SDP address")
		require.Equal(t, latchKeep, l.check(ap("203.0.113.5:0"), 7, true, at(20)))
		require.Equal(t, latchStranger, l.check(ap("198.51.100.9:0"), 7, true, at(20)))
	})
	t.Run("no sdp address: the first sender", func(t *testing.T) {
		l := newSourceLatch(0, 0)
		require.Equal(t, latchStranger, l.check(stranger, 7, false, at(0)))
		require.Equal(t, LatchNAT, l.check(caller, 7, true, at(0)))
	})
}

// udpPeer is a loopback socket that sends G.711 RTP and counts what it gets.
type udpPeer struct {
	conn *net.UDPConn
	got  atomic.Int64
	done chan struct{}
}

func newUDPPeer(t *testing.T, host string) *udpPeer {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(host), 0)))
	require.NoError(t, err)
	p := &udpPeer{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 1500)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
			p.got.Add(1)
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-p.done
	})
	return p
}

func (p *udpPeer) addr() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// send sends n packets of a steady level (the level tells whose audio
// the session played) with ssrc, starting at seq.
func (p *udpPeer) send(t *testing.T, to netip.AddrPort, ssrc uint32, seq uint16, n int, level int16) {
	t.Helper()
	pcm := make([]int16, 160)
	for i := range pcm {
		pcm[i] = level
	}
	payload := PCMU.EncodeFrame(nil, pcm)
	for i := range n {
		s := seq + uint16(i)
		raw, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: s, Timestamp: uint32(s) * 160, SSRC: ssrc},
			Payload: payload}).Marshal()
		require.NoError(t, err)
		_, err = p.conn.WriteToUDPAddrPort(raw, to)
		require.NoError(t, err)
		// A phone's packet clock: the session reads its socket once a
		// frame, and the latch judges silence by arrival times.
		time.Sleep(20 * time.Millisecond)
	}
}

type countInc struct{ n atomic.Int64 }

func (c *countInc) Inc() { c.n.Add(1) }

// levelSink records the levels of played frames.
type levelSink struct{ loud, quiet atomic.Int64 }

func (l *levelSink) onAudio(pcm []int16, st FrameStatus) {
	if st != FramePlayed || len(pcm) == 0 {
		return
	}
	switch {
	case pcm[0] > 6000:
		l.loud.Add(1)
	case pcm[0] > 500:
		l.quiet.Add(1)
	}
}

// TestSessionStrangerDropped: the SDP names the caller; a stranger on the
// same host sends well-formed RTP before and while the caller talks. The
// stranger gets nothing and its audio is never played; the caller is
// answered; the stranger's packets are counted.
func TestSessionStrangerDropped(t *testing.T) {
	pool := newPool(t)
	caller, stranger := newUDPPeer(t, "127.0.0.1"), newUDPPeer(t, "127.0.0.1")
	var sink levelSink
	var strangers countInc
	s := newListeningSession(t, pool, SessionOptions{Remote: caller.addr(), Strangers: &strangers}, 8000, sink.onAudio)
	to := addr(s.LocalPort())
	stranger.send(t, to, 7, 1, 20, 8000) // before the caller, same SSRC even
	caller.send(t, to, 7, 100, 20, 1000)
	stranger.send(t, to, 7, 21, 20, 8000)
	require.Eventually(t, func() bool { return sink.quiet.Load() >= 10 && caller.got.Load() > 0 }, 3*time.Second, 10*time.Millisecond, "%+v %d %d", s.Stats(), sink.quiet.Load(), caller.got.Load())
	require.Equal(t, caller.addr(), s.Remote())
	require.Zero(t, stranger.got.Load(), "the stranger hears nothing")
	require.Zero(t, sink.loud.Load(), "the stranger's audio is never played")
	// Packets are read at the session's next frame tick: all of them first.
	require.Eventually(t, func() bool { return s.Stats().Strangers == 40 }, 2*time.Second, 5*time.Millisecond)
	st := s.Stats()
	require.Equal(t, uint64(40), st.Strangers)
	require.Equal(t, int64(40), strangers.n.Load())
	require.Equal(t, uint64(20), st.PacketsIn)
	require.Equal(t, uint64(1), st.Latches)

	// RTCP from another host, or from the caller's host about another
	// stream, is a stranger's too; the caller's own is taken.
	other := newUDPPeer(t, "127.0.0.2")
	rr := []byte{0x80, 201, 0, 1, 0, 0, 0, 9}
	_, err := other.conn.WriteToUDPAddrPort(rr, addr(s.LocalPort()+1))
	require.NoError(t, err)
	_, err = stranger.conn.WriteToUDPAddrPort(rr, addr(s.LocalPort()+1))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().Strangers == 42 }, 2*time.Second, 5*time.Millisecond)
	require.Zero(t, s.Stats().RTCPIn)
	rr[7] = 7
	_, err = caller.conn.WriteToUDPAddrPort(rr, addr(s.LocalPort()+1))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.Stats().RTCPIn == 1 }, 2*time.Second, 5*time.Millisecond)
}

// TestSessionNATLatch: the SDP names an address nothing comes from; after
// the grace the first source of the call's payload type is latched, and a
// later stranger is not.
func TestSessionNATLatch(t *testing.T) {
	pool := newPool(t)
	caller, stranger := newUDPPeer(t, "127.0.0.1"), newUDPPeer(t, "127.0.0.1")
	var sink levelSink
	s := newListeningSession(t, pool, SessionOptions{Remote: addr(9), NATGrace: 100 * time.Millisecond}, 8000, sink.onAudio)
	s.Playout().Write("x", make([]int16, 8000)) // we send (to the silent SDP address)
	// The caller sends until the NAT grace passed on the session's clock
	// and it is latched (the latch's own clock is injected in
	// TestSourceLatch); its packets before are a stranger's.
	seq := uint16(1)
	require.Eventually(t, func() bool {
		caller.send(t, addr(s.LocalPort()), 5, seq, 1, 1000)
		seq++
		return s.Remote() == caller.addr()
	}, 2*time.Second, time.Millisecond)
	early := s.Stats().Strangers
	caller.send(t, addr(s.LocalPort()), 5, seq, 10, 1000)
	stranger.send(t, addr(s.LocalPort()), 6, 1, 10, 8000)
	require.Eventually(t, func() bool { return caller.got.Load() > 0 }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, caller.addr(), s.Remote())
	require.Zero(t, stranger.got.Load())
	// Packets are read at the session's next frame tick: all of them first.
	require.Eventually(t, func() bool { return s.Stats().Strangers == early+10 }, 2*time.Second, 5*time.Millisecond)
}

// TestSessionRelatch: the caller's NAT mapping changes (same SSRC, new
// port). The new source is taken only once the old one fell silent.
func TestSessionRelatch(t *testing.T) {
	pool := newPool(t)
	first, second, third := newUDPPeer(t, "127.0.0.1"), newUDPPeer(t, "127.0.0.1"), newUDPPeer(t, "127.0.0.1")
	s := newSession(t, pool, SessionOptions{Remote: first.addr(), RelatchAfter: 200 * time.Millisecond})
	to := addr(s.LocalPort())
	first.send(t, to, 7, 1, 5, 1000)
	second.send(t, to, 7, 6, 5, 1000) // at once: refused
	require.Equal(t, first.addr(), s.Remote())
	// The first source falls silent for longer than RelatchAfter on the
	// session's real clock (TestSourceLatch injects the latch's).
	time.Sleep(250 * time.Millisecond)
	second.send(t, to, 8, 11, 5, 1000) // silent long enough, but another stream
	require.Equal(t, first.addr(), s.Remote())
	second.send(t, to, 7, 16, 5, 1000)
	require.Equal(t, second.addr(), s.Remote())
	require.Eventually(t, func() bool { return second.got.Load() > 0 }, 2*time.Second, 5*time.Millisecond)
	// Packets are read at the session's next frame tick: all of them first.
	require.Eventually(t, func() bool { return s.Stats().PacketsIn == 10 }, 2*time.Second, 5*time.Millisecond)
	st := s.Stats()
	require.Equal(t, uint64(2), st.Latches)
	require.Equal(t, uint64(10), st.Strangers)

	// Signalling moves it at once (a re-INVITE with a new address).
	s.SetRemote(third.addr())
	third.send(t, to, 9, 1, 5, 1000)
	second.send(t, to, 7, 21, 5, 1000)
	require.Equal(t, third.addr(), s.Remote())
	require.Eventually(t, func() bool { return s.Stats().Strangers == 15 }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, uint64(15), s.Stats().Strangers)
}

// BenchmarkFrameSourceCheck is the per-packet source check, for the
// latched peer and for a stranger: no allocation.
func BenchmarkFrameSourceCheck(b *testing.B) {
	l := newSourceLatch(0, 0)
	caller, stranger := ap("203.0.113.5:4000"), ap("198.51.100.9:5000")
	l.signal(caller)
	now := time.Unix(1000, 0)
	l.sent(now)
	l.check(caller, 7, true, now)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(10 * time.Millisecond)
		if l.check(caller, 7, true, now) != latchKeep || l.check(stranger, 7, true, now) != latchStranger {
			b.Fatal("latch moved")
		}
	}
}

// BenchmarkFrameHandleRTPStranger is a stranger's packet through the
// session's receive path (dropped): no allocation.
func BenchmarkFrameHandleRTPStranger(b *testing.B) {
	pool, err := NewPortPool(loopback, 39000, 39099)
	if err != nil {
		b.Fatal(err)
	}
	pair, err := pool.Allocate()
	if err != nil {
		b.Fatal(err)
	}
	var strangers countInc
	s, err := NewSession(pair, SessionOptions{Remote: ap("127.0.0.1:9"), Strangers: &strangers})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: 1, Timestamp: 160, SSRC: 7}, Payload: make([]byte, 160)}
	src := ap("127.0.0.1:5000")
	b.ReportAllocs()
	for b.Loop() {
		s.handleRTP(p, src, 172, s.now())
	}
}

func TestSourceCheckAllocs(t *testing.T) {
	l := newSourceLatch(0, 0)
	caller, stranger := ap("203.0.113.5:4000"), ap("198.51.100.9:5000")
	l.signal(caller)
	now := time.Unix(1000, 0)
	l.sent(now)
	require.Zero(t, testing.AllocsPerRun(200, func() {
		now = now.Add(10 * time.Millisecond)
		l.check(caller, 7, true, now)
		l.check(stranger, 7, true, now)
	}))
}
