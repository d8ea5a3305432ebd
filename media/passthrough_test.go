package media

import (
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// These tests run passthrough sessions over real UDP sockets on loopback:
// a Session on one side, a bare RTP peer (or a second Session) on the
// other, so what is checked is the bytes on the wire.

// rawPeer is a bare RTP endpoint on loopback that records what it gets.
type rawPeer struct {
	conn *net.UDPConn
	mu   sync.Mutex
	got  []*rtp.Packet
}

func newRawPeer(t *testing.T) *rawPeer {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr(0)))
	require.NoError(t, err)
	p := &rawPeer{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			var pk rtp.Packet
			if pk.Unmarshal(bytes.Clone(buf[:n])) == nil {
				p.mu.Lock()
				p.got = append(p.got, &pk)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return p
}

func (p *rawPeer) port() int { return p.conn.LocalAddr().(*net.UDPAddr).Port }

func (p *rawPeer) send(t *testing.T, to int, pt uint8, seq uint16, ts uint32, payload []byte) {
	t.Helper()
	b, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: pt, SequenceNumber: seq, Timestamp: ts, SSRC: 42}, Payload: payload}).Marshal()
	require.NoError(t, err)
	_, err = p.conn.WriteToUDPAddrPort(b, addr(to))
	require.NoError(t, err)
}

// packets returns a copy of what arrived so far.
func (p *rawPeer) packets() []*rtp.Packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*rtp.Packet(nil), p.got...)
}

// payloads returns the concatenated payloads received with payload type pt.
func (p *rawPeer) payloads(pt uint8) []byte {
	var out []byte
	for _, pk := range p.packets() {
		if pk.PayloadType == pt {
			out = append(out, pk.Payload...)
		}
	}
	return out
}

// codedFrame is one inbound frame as a code-word listener or a PCM
// listener saw it, with the status the session's tap saw it with.
type codedFrame struct {
	st      FrameStatus
	payload []byte
	pcm     []int16
}

// frameSink collects the frames of a session's listeners: it is the
// session's Tap too (SessionOptions.Tap), which sees each frame's status
// just before the listeners get the frame.
type frameSink struct {
	mu      sync.Mutex
	lastSt  FrameStatus
	payload []codedFrame
	audio   []codedFrame
}

func (s *frameSink) Inbound(f Frame) {
	s.mu.Lock()
	s.lastSt = f.Status
	s.mu.Unlock()
}

func (s *frameSink) Outbound(Frame) {}

func (s *frameSink) onPayload(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.payload = append(s.payload, codedFrame{st: s.lastSt, payload: bytes.Clone(p)})
}

func (s *frameSink) onAudio(pcm []int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audio = append(s.audio, codedFrame{st: s.lastSt, pcm: append([]int16(nil), pcm...)})
}

// listenCoded makes sink a listener of s's code words in f (a relay).
func listenCoded(t *testing.T, s *Session, f Format, sink *frameSink) {
	t.Helper()
	_, err := s.Listen(f, sink.onPayload)
	require.NoError(t, err)
}

// listenPCM makes sink a listener of s's audio as 8 kHz samples.
func listenPCM(t *testing.T, s *Session, sink *frameSink) {
	t.Helper()
	_, err := s.ListenPCM(ClockRate, sink.onAudio)
	require.NoError(t, err)
}

func (s *frameSink) frames() (payload, audio []codedFrame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]codedFrame(nil), s.payload...), append([]codedFrame(nil), s.audio...)
}

// played returns the concatenated payloads of the frames with status st.
func played(frames []codedFrame, st FrameStatus) []byte {
	var out []byte
	for _, f := range frames {
		if f.st == st {
			out = append(out, f.payload...)
		}
	}
	return out
}

// everyCode returns n bytes that include all 256 code words, shuffled.
func everyCode(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	rng.Shuffle(n, func(i, j int) { b[i], b[j] = b[j], b[i] })
	return b
}

// TestPassthroughInbound: the peer's payload bytes reach a listener of
// the session's own G.711 exactly as sent, whatever the order they arrive
// in; a lost packet is concealed on the code words; a PCM listener beside
// it gets the same frames decoded.
func TestPassthroughInbound(t *testing.T) {
	tests := []struct {
		name    string
		codec   Codec
		order   []int // packets in sending order; missing ones are lost
		decode  bool  // a PCM listener as well
		wantLen int   // frames sent
	}{
		{"PCMU in order", PCMU, []int{0, 1, 2, 3}, false, 4},
		{"PCMA in order", PCMA, []int{0, 1, 2, 3}, false, 4},
		{"PCMU reordered", PCMU, []int{0, 2, 1, 4, 3, 5}, false, 6},
		{"PCMA reordered and decoded too", PCMA, []int{1, 0, 3, 2}, true, 4},
		{"PCMU one lost", PCMU, []int{0, 1, 3, 4}, false, 5},
		{"PCMA one lost, decoded too", PCMA, []int{0, 1, 3}, true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(len(tt.name))))
			pool := newPool(t)
			peer := newRawPeer(t)
			var sink frameSink
			s := newSession(t, pool, SessionOptions{Codec: tt.codec, Tap: &sink, JitterDelay: 60 * time.Millisecond})
			law := FormatPCMU
			if tt.codec == PCMA {
				law = FormatPCMA
			}
			listenCoded(t, s, law, &sink)
			if tt.decode {
				listenPCM(t, s, &sink)
			}
			sent := everyCode(rng, 160*tt.wantLen)
			frame := func(i int) []byte { return sent[160*i : 160*(i+1)] }
			for _, i := range tt.order {
				peer.send(t, s.LocalPort(), tt.codec.PayloadType, uint16(100+i), uint32(8000+160*i), frame(i))
			}
			last := tt.order[len(tt.order)-1]
			for _, i := range tt.order {
				last = max(last, i)
			}
			require.Eventually(t, func() bool {
				got, _ := sink.frames()
				return bytes.Contains(played(got, FramePlayed), frame(last))
			}, 5*time.Second, 10*time.Millisecond)

			got, audio := sink.frames()
			// The frames from the first packet on, in order: a lost one is
			// the previous frame attenuated (as the PCM path conceals it).
			var want []codedFrame
			for i := 0; i <= last; i++ {
				if contains(tt.order, i) {
					want = append(want, codedFrame{st: FramePlayed, payload: frame(i)})
				} else {
					want = append(want, codedFrame{st: FrameConcealed, payload: attenuated(tt.codec, frame(i-1), concealGains[0])})
				}
			}
			start := indexOfFrame(got, want[0])
			require.GreaterOrEqual(t, start, 0, "first frame delivered")
			require.Greater(t, start, 0, "the initial delay is silence")
			require.Equal(t, FrameSilence, got[0].st)
			require.Equal(t, bytesOf(tt.codec.SilenceByte(), 160), got[0].payload)
			require.GreaterOrEqual(t, len(got), start+len(want))
			require.Equal(t, want, got[start:start+len(want)])

			if !tt.decode {
				require.Empty(t, audio)
				return
			}
			// The PCM listener sees the same frames, decoded.
			require.GreaterOrEqual(t, len(audio), start+len(want))
			for i, f := range got[:start+len(want)] {
				require.Equal(t, f.st, audio[i].st)
				require.Equal(t, tt.codec.DecodeFrame(nil, f.payload), audio[i].pcm, "frame %d", i)
			}
			st := s.Stats()
			require.Equal(t, uint64(len(tt.order)), st.PacketsIn)
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func indexOfFrame(frames []codedFrame, f codedFrame) int {
	for i, g := range frames {
		if g.st == f.st && bytes.Equal(g.payload, f.payload) {
			return i
		}
	}
	return -1
}

// TestPassthroughOutbound: bytes given to WriteCoded leave as the RTP
// payload byte for byte, in the session's payload type, starting a
// talkspurt; before and after, the codec's silence.
func TestPassthroughOutbound(t *testing.T) {
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			pool := newPool(t)
			peer := newRawPeer(t)
			s := newSession(t, pool, SessionOptions{Codec: c, Remote: addr(peer.port())})
			require.Equal(t, "RTP -> Jitter(40ms "+c.Name+") | Playout("+c.Name+") -> Pacer("+c.Name+" 20ms) -> RTP", s.String())
			require.Eventually(t, func() bool { return len(peer.packets()) > 0 }, 5*time.Second, 5*time.Millisecond)
			out := everyCode(rand.New(rand.NewPCG(6, 7)), 160*3)
			s.Playout().WriteCoded("item_1", c, out)
			require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(c.PayloadType), out) },
				5*time.Second, 10*time.Millisecond)
			pkts := peer.packets()
			k := indexOfPayload(pkts, out[:160])
			require.Positive(t, k, "silence was sent before")
			require.Equal(t, bytesOf(c.SilenceByte(), 160), pkts[k-1].Payload)
			for i := range 3 {
				require.Equal(t, c.PayloadType, pkts[k+i].PayloadType)
				require.Equal(t, out[160*i:160*(i+1)], pkts[k+i].Payload)
				require.Equal(t, i == 0, pkts[k+i].Marker, "marker on the first packet of the talkspurt")
			}
		})
	}
}

func indexOfPayload(pkts []*rtp.Packet, payload []byte) int {
	for i, p := range pkts {
		if bytes.Equal(p.Payload, payload) {
			return i
		}
	}
	return -1
}

// TestPassthroughSessionToSession: two passthrough sessions on loopback;
// what one's consumer writes, the other's consumer reads, byte for byte,
// with no decode or encode anywhere on the way.
func TestPassthroughSessionToSession(t *testing.T) {
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			pool := newPool(t)
			var sink frameSink
			a := newSession(t, pool, SessionOptions{Codec: c})
			// A 300 ms jitter buffer: the test is about the bytes, and a
			// frame over 40 ms late on a loaded machine is dropped as late,
			// which breaks the five in a row it looks for.
			b := newSession(t, pool, SessionOptions{Codec: c, Tap: &sink, JitterDelay: 300 * time.Millisecond})
			law := FormatPCMU
			if c == PCMA {
				law = FormatPCMA
			}
			listenCoded(t, b, law, &sink)
			a.SetRemote(addr(b.LocalPort()))
			b.SetRemote(addr(a.LocalPort()))
			out := everyCode(rand.New(rand.NewPCG(8, 9)), 160*5)
			a.Playout().WriteCoded("item_1", c, out)
			require.Eventually(t, func() bool {
				got, _ := sink.frames()
				return bytes.Contains(played(got, FramePlayed), out)
			}, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestPassthroughFlush: a barge-in Flush during passthrough reports the
// item and exactly the milliseconds that left as RTP, and the next packets
// are silence; late writes of the cut item are dropped.
func TestPassthroughFlush(t *testing.T) {
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			pool := newPool(t)
			peer := newRawPeer(t)
			s := newSession(t, pool, SessionOptions{Codec: c, Remote: addr(peer.port())})
			item := everyCode(rand.New(rand.NewPCG(10, 11)), 160*50) // 1 s
			s.Playout().WriteCoded("resp_1", c, item)
			require.InDelta(t, float64(time.Second), float64(s.Playout().Len()), float64(20*time.Millisecond), "a talkspurt's first frame may leave as it is queued")
			require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(c.PayloadType), item[:160*5]) },
				5*time.Second, 5*time.Millisecond)
			id, ms := s.Playout().Flush()
			require.Equal(t, "resp_1", id)
			require.Zero(t, s.Playout().Len())
			s.Playout().WriteCoded("resp_1", c, item) // the model's late delta: dropped
			require.Zero(t, s.Playout().Len())

			// Wait for packets after the cut, then count what was heard.
			n := len(peer.packets())
			require.Eventually(t, func() bool { return len(peer.packets()) >= n+3 }, 5*time.Second, 5*time.Millisecond)
			pkts := peer.packets()
			k := indexOfPayload(pkts, item[:160])
			require.GreaterOrEqual(t, k, 0)
			heard := 0
			for k+heard < len(pkts) && heard < 50 && bytes.Equal(pkts[k+heard].Payload, item[160*heard:160*(heard+1)]) {
				heard++
			}
			require.GreaterOrEqual(t, heard, 5)
			require.Equal(t, heard*20, ms, "Flush reports what left as RTP")
			for _, p := range pkts[k+heard:] {
				require.Equal(t, bytesOf(c.SilenceByte(), 160), p.Payload, "silence after the cut")
			}
		})
	}
}

// TestPassthroughCodecSwitch: a re-INVITE moves the call from PCMU to PCMA
// while the consumer keeps speaking PCMU: its bytes leave as PCMA and the
// peer's PCMA reaches it as PCMU, transcoded code word to code word.
func TestPassthroughCodecSwitch(t *testing.T) {
	pool := newPool(t)
	peer := newRawPeer(t)
	var sink frameSink
	s := newSession(t, pool, SessionOptions{Codec: PCMU, Remote: addr(peer.port()), Tap: &sink})
	listenCoded(t, s, FormatPCMU, &sink)
	rng := rand.New(rand.NewPCG(12, 13))

	before := everyCode(rng, 160*2)
	s.Playout().WriteCoded("item_1", PCMU, before)
	require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(PayloadTypePCMU), before) },
		5*time.Second, 10*time.Millisecond)

	s.SetCodec(PCMA)
	require.Contains(t, s.String(), "Playout(PCMU) -> PCMU->PCMA(transcode) -> Pacer(PCMA 20ms)")
	after := everyCode(rng, 160*2)
	s.Playout().WriteCoded("item_2", PCMU, after)
	want := PCMA.Transcode(nil, PCMU, after)
	require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(PayloadTypePCMA), want) },
		5*time.Second, 10*time.Millisecond)

	// The peer follows the switch; the consumer still gets PCMU.
	alaw := everyCode(rng, 160*3)
	for i := range 3 {
		peer.send(t, s.LocalPort(), PayloadTypePCMA, uint16(i), uint32(160*i), alaw[160*i:160*(i+1)])
	}
	wantIn := PCMU.Transcode(nil, PCMA, alaw)
	require.Eventually(t, func() bool {
		got, _ := sink.frames()
		return bytes.Contains(played(got, FramePlayed), wantIn)
	}, 5*time.Second, 10*time.Millisecond)
}

// TestListenersOfOneSession: listeners of one session in different
// formats each get every frame in theirs (a relay of the code words, the
// other law, PCM at 8 and 24 kHz), decoded once; a stopped listener gets
// nothing more, and the session's String shows each chain.
func TestListenersOfOneSession(t *testing.T) {
	pool := newPool(t)
	peer := newRawPeer(t)
	var relay, other frameSink
	var pcm8, pcm24 [][]byte
	var mu sync.Mutex
	s := newSession(t, pool, SessionOptions{Codec: PCMU, Remote: addr(peer.port())})
	listenCoded(t, s, FormatPCMU, &relay)
	lo, err := s.Listen(FormatPCMA, other.onPayload)
	require.NoError(t, err)
	_, err = s.Listen(PCM16(8000), func(b []byte) { mu.Lock(); pcm8 = append(pcm8, bytes.Clone(b)); mu.Unlock() })
	require.NoError(t, err)
	_, err = s.Listen(PCM16(24000), func(b []byte) { mu.Lock(); pcm24 = append(pcm24, bytes.Clone(b)); mu.Unlock() })
	require.NoError(t, err)
	require.Contains(t, s.String(), "=> [PCMU; PCMU -> PCMA; PCMU(decode) -> PCM16LE(8k); PCMU(decode) -> Resample(8k->24k) -> PCM16LE(24k)]")

	frame := everyCode(rand.New(rand.NewPCG(1, 2)), 160)
	for i := range 4 {
		peer.send(t, s.LocalPort(), PayloadTypePCMU, uint16(i), uint32(160*i), frame)
	}
	require.Eventually(t, func() bool {
		got, _ := relay.frames()
		return len(played(got, FramePlayed)) >= 160*4 || bytes.Count(flatten(got), frame) >= 4
	}, 5*time.Second, 10*time.Millisecond)
	got, _ := relay.frames()
	otherGot, _ := other.frames()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, otherGot, len(got))
	require.GreaterOrEqual(t, len(pcm8), len(got)-1)
	for i, f := range got[:len(pcm8)] {
		require.Equal(t, PCMA.Transcode(nil, PCMU, f.payload), otherGot[i].payload)
		require.Equal(t, AppendPCM16LE(nil, PCMU.DecodeFrame(nil, f.payload)), pcm8[i])
		require.Len(t, pcm24[i], 3*len(pcm8[i]))
	}
	lo.Stop()
	lo.Stop() // idempotent
	require.NotContains(t, s.String(), "PCMU -> PCMA")
	n := len(otherGot)
	mu.Unlock()
	peer.send(t, s.LocalPort(), PayloadTypePCMU, 4, 640, frame)
	require.Eventually(t, func() bool { g, _ := relay.frames(); return len(g) > len(got)+3 }, 5*time.Second, 10*time.Millisecond)
	otherGot, _ = other.frames()
	mu.Lock()
	require.Len(t, otherGot, n, "a stopped listener gets nothing more")
}

func flatten(frames []codedFrame) []byte {
	var out []byte
	for _, f := range frames {
		out = append(out, f.payload...)
	}
	return out
}

// TestWriterConvertsOnce: PCM written at 24 kHz leaves a G.711 session
// resampled and encoded once; G.711 written to a session of the other law
// leaves transcoded; both writers print their chain.
func TestWriterConvertsOnce(t *testing.T) {
	pool := newPool(t)
	peer := newRawPeer(t)
	p := newSession(t, pool, SessionOptions{Codec: PCMA, Remote: addr(peer.port())})
	w, err := p.Writer(PCM16(24000), WriterOptions{})
	require.NoError(t, err)
	require.Equal(t, "PCM16LE(24k) -> Resample(24k->8k) -> PCMA(encode) -> Playout(PCMA)", w.String())
	relay, err := p.Writer(FormatPCMU, WriterOptions{})
	require.NoError(t, err)
	require.Equal(t, "PCMU -> PCMA -> Playout(PCMA)", relay.String())

	ulaw := everyCode(rand.New(rand.NewPCG(3, 4)), 160*2)
	relay.Write("relay", ulaw)
	want := PCMA.Transcode(nil, PCMU, ulaw)
	require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(PayloadTypePCMA), want) },
		5*time.Second, 10*time.Millisecond)

	prompt := tone(440, 24000, 480*3, 8000)
	w.Write("greeting", AppendPCM16LE(nil, prompt))
	require.Eventually(t, func() bool { return len(peer.payloads(PayloadTypePCMA)) >= len(want)+480 }, 5*time.Second, 10*time.Millisecond)
}
