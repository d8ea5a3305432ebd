package media

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// rawPeer is a bare RTP endpoint on loopback that records payloads.
type rawPeer struct {
	conn *net.UDPConn
	mu   sync.Mutex
	got  []*rtp.Packet
}

func newRawPeer(t *testing.T) *rawPeer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
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
			if pk.Unmarshal(append([]byte(nil), buf[:n]...)) == nil {
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
	_, err = p.conn.WriteToUDP(b, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: to})
	require.NoError(t, err)
}

// payloads returns the audio payloads received with payload type pt.
func (p *rawPeer) payloads(pt uint8) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, pk := range p.got {
		if pk.PayloadType == pt {
			out = append(out, pk.Payload...)
		}
	}
	return out
}

func codePattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// TestPassthroughSession: in passthrough the caller's payload bytes reach
// OnPayload as they were sent (reordered packets included, no OnAudio
// unless asked), coded writes leave as the RTP payload byte for byte, and
// after a switch to PCMA the same audio leaves transcoded.
func TestPassthroughSession(t *testing.T) {
	pool := newPool(t)
	peer := newRawPeer(t)
	var mu sync.Mutex
	var in []byte
	s := newSession(t, pool, SessionOptions{Codec: PCMU, Passthrough: true, Remote: addr(peer.port()),
		OnPayload: func(p []byte, st FrameStatus) {
			if st == FramePlayed {
				mu.Lock()
				in = append(in, p...)
				mu.Unlock()
			}
		}})
	_, coded := s.Playout().Coded()
	require.True(t, coded)

	sent := codePattern(160 * 4)
	order := []int{0, 2, 1, 3} // the jitter buffer puts them back in order
	for _, i := range order {
		peer.send(t, s.LocalPort(), PayloadTypePCMU, uint16(100+i), uint32(8000+160*i), sent[160*i:160*(i+1)])
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Contains(in, sent)
	}, 3*time.Second, 10*time.Millisecond)

	out := codePattern(160 * 3)
	s.Playout().WriteCoded("item", PCMU, out)
	require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(PayloadTypePCMU), out) }, 3*time.Second, 10*time.Millisecond)

	s.SetCodec(PCMA)
	s.Playout().WriteCoded("item2", PCMU, out)
	want := PCMA.Transcode(nil, PCMU, out)
	require.Eventually(t, func() bool { return bytes.Contains(peer.payloads(PayloadTypePCMA), want) }, 3*time.Second, 10*time.Millisecond)
}

// TestCodedJitterConceal: a lost frame in passthrough is concealed as the
// PCM path conceals it (the last frame attenuated), the rest untouched.
func TestCodedJitterConceal(t *testing.T) {
	pcm, err := NewJitterBuffer(JitterOptions{Delay: 20 * time.Millisecond})
	require.NoError(t, err)
	coded, err := NewCodedJitterBuffer(PCMU, JitterOptions{Delay: 20 * time.Millisecond})
	require.NoError(t, err)
	frames := [][]byte{codePattern(160), codePattern(170)[10:], nil, codePattern(160)}
	for i, f := range frames {
		if f == nil {
			continue // lost
		}
		h := &rtp.Header{PayloadType: PayloadTypePCMU, SSRC: 1, SequenceNumber: uint16(i), Timestamp: uint32(160 * i)}
		pcm.Push(h, f)
		coded.Push(h, f)
	}
	var concealed int
	for range 5 {
		p, st1 := pcm.Pop(nil)
		c, st2 := coded.Pop(nil)
		require.Equal(t, st1, st2)
		if st1 == FrameConcealed {
			concealed++
			require.Equal(t, PCMU.EncodeFrame(nil, p), c, "concealed alike")
		} else {
			require.Equal(t, p, PCMU.DecodeFrame(nil, c), "status %v", st1)
		}
	}
	require.Equal(t, 1, concealed)
}
