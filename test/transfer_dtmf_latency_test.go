package test

import (
	"context"
	binenc "encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/media"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

// rtpStream sends a phone's RTP from a test's socket: PCMU silence every
// 20 ms, and, when asked, an RFC 4733 key (start, continuations, three
// end packets) on the same SSRC and clock, noting when its first packet
// left.
type rtpStream struct {
	conn *net.UDPConn
	to   netip.AddrPort
	pt   uint8 // telephone-event's payload type

	mu   sync.Mutex
	keys []byte
	sent map[byte]time.Time
}

// keyCodes are RFC 4733's event codes of the keys the test presses.
var keyCodes = map[byte]byte{'1': 1, '2': 2, '3': 3, '4': 4, '5': 5, '6': 6, '7': 7, '8': 8, '9': 9, '0': 0}

func startRTPStream(t *testing.T, conn *net.UDPConn, to netip.AddrPort, pt uint8) *rtpStream {
	t.Helper()
	s := &rtpStream{conn: conn, to: to, pt: pt, sent: map[byte]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// press queues a key; sentAt reports when its first packet left.
func (s *rtpStream) press(k byte) {
	s.mu.Lock()
	s.keys = append(s.keys, k)
	s.mu.Unlock()
}

func (s *rtpStream) sentAt(k byte) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.sent[k]
	return at, ok
}

func (s *rtpStream) run(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	const ssrc = 0x5eed
	var seq uint16 = 1000
	var ts uint32 = 160000
	var key byte
	var evTS uint32
	var dur, ends int
	silence := make([]byte, 160)
	for i := range silence {
		silence[i] = media.PCMU.SilenceByte()
	}
	send := func(h rtp.Header, payload []byte) {
		h.Version, h.SSRC, h.SequenceNumber = 2, ssrc, seq
		seq++
		b, err := (&rtp.Packet{Header: h, Payload: payload}).Marshal()
		if err == nil {
			_, _ = s.conn.WriteToUDPAddrPort(b, s.to)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if key == 0 {
			s.mu.Lock()
			if len(s.keys) > 0 {
				key, s.keys = s.keys[0], s.keys[1:]
				evTS, dur, ends = ts, 0, 0
			}
			s.mu.Unlock()
		}
		switch {
		case key == 0:
			send(rtp.Header{PayloadType: 0, Timestamp: ts}, silence)
		default:
			dur += 160
			end := dur > 800 // 100 ms pressed
			if end {
				dur = 960
				ends++
			}
			p := make([]byte, 4)
			p[0] = keyCodes[key]
			p[1] = 10 // volume -10 dBm0
			if end {
				p[1] |= 0x80
			}
			binenc.BigEndian.PutUint16(p[2:], uint16(dur))
			send(rtp.Header{PayloadType: s.pt, Timestamp: evTS, Marker: dur == 160}, p)
			if dur == 160 {
				s.mu.Lock()
				s.sent[key] = time.Now()
				s.mu.Unlock()
			}
			if ends == 3 {
				key = 0
			}
		}
		ts += 160
	}
}

// firstEvent is when the first RFC 4733 packet of key k (payload type pt)
// after since reached peer.
func firstEvent(peer *rtpPeer, pt uint8, k byte, since time.Time) (time.Time, bool) {
	for _, p := range peer.received() {
		if p.hdr.PayloadType == pt && len(p.raw) >= 4 && p.raw[0] == keyCodes[k] && !p.at.Before(since) {
			return p.at, true
		}
	}
	return time.Time{}, false
}

// TestTransferBridgeDTMFLatency: a key pressed on one side of a bridge,
// from the first packet of its RFC 4733 event to the first RFC 4733
// packet of it on the other side, both ways. Both phones' RTP is the
// test's own sockets (the caller a SIP softphone, the human sipp), so the
// time a key left one and reached the other are read on one clock. Five
// keys each way: every one arrives, once, as the key pressed; the figures
// go to docs/benchmarks.md.
func TestTransferBridgeDTMFLatency(t *testing.T) {
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557326")
	humanRTP, callerRTP := newRTPPeer(t), newRTPPeer(t)
	uri, sipp := startHuman(t, human{Name: "keys-latency", RingMs: 100, Port: fmt.Sprint(humanRTP.port())})
	dumpOnFail(t, d, sipp)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := siptest.NewSoftphone(t).Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: number,
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(callerRTP.port())), Codecs: []sip.Codec{sip.PCMU}})
	require.NoError(t, err)
	callerOut := startRTPStream(t, callerRTP.conn, out.Media().RemoteAddr, 101)
	c := liveCall(t, d)
	bridgeTo(t, d, c.ID(), uri, nil)
	// The human's leg's RTP address: where the appliance's packets to the
	// human come from (symmetric RTP).
	var humanLeg netip.AddrPort
	require.Eventually(t, func() bool {
		for _, p := range humanRTP.received() {
			humanLeg = p.from
		}
		return humanLeg.IsValid()
	}, 10*time.Second, 10*time.Millisecond, "the appliance sent the human nothing")
	humanOut := startRTPStream(t, humanRTP.conn, humanLeg, 101)
	time.Sleep(500 * time.Millisecond) // both streams latched: the keys are what is measured

	measure := func(from *rtpStream, to *rtpPeer, keys string) []time.Duration {
		var lat []time.Duration
		for i := range len(keys) {
			k := keys[i]
			from.press(k)
			var sent, got time.Time
			require.Eventually(t, func() bool {
				var ok bool
				if sent, ok = from.sentAt(k); !ok {
					return false
				}
				got, ok = firstEvent(to, 101, k, sent)
				return ok
			}, 5*time.Second, 2*time.Millisecond, "key %c did not cross the bridge", k)
			lat = append(lat, got.Sub(sent))
			time.Sleep(400 * time.Millisecond) // the key's end packets, and a gap
		}
		return lat
	}
	toHuman := measure(callerOut, humanRTP, "12345")
	toCaller := measure(humanOut, callerRTP, "67890")
	require.NoError(t, out.Hangup(ctx, "done"))
	requireNoCalls(t, d)
	sipp.wait(t, 10*time.Second)

	// Each key reached the other side as one event (one start timestamp).
	for _, tc := range []struct {
		peer *rtpPeer
		keys string
	}{{humanRTP, "12345"}, {callerRTP, "67890"}} {
		starts := map[byte]map[uint32]bool{}
		for _, p := range tc.peer.received() {
			if p.hdr.PayloadType == 101 && len(p.raw) >= 4 {
				if starts[p.raw[0]] == nil {
					starts[p.raw[0]] = map[uint32]bool{}
				}
				starts[p.raw[0]][p.hdr.Timestamp] = true
			}
		}
		for i := range len(tc.keys) {
			require.Len(t, starts[keyCodes[tc.keys[i]]], 1, "key %c", tc.keys[i])
		}
		require.Len(t, starts, len(tc.keys), "keys nobody pressed")
	}
	for _, l := range []struct {
		dir string
		lat []time.Duration
	}{{"caller to human", toHuman}, {"human to caller", toCaller}} {
		s := slices.Clone(l.lat)
		slices.Sort(s)
		t.Logf("DTMF %s: RFC 4733 start to the first RFC 4733 packet on the other side: min %.1f ms, median %.1f ms, max %.1f ms (%v)",
			l.dir, ms(s[0]), ms(s[len(s)/2]), ms(s[len(s)-1]), l.lat)
		require.Less(t, s[len(s)-1], time.Second, "a key took over a second across the bridge")
	}
	require.Zero(t, d.App.RTPPortsInUse(), "RTP ports left")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
