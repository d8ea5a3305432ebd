package test

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// rtpPacket is one RTP packet a test peer received, with its arrival time.
type rtpPacket struct {
	at  time.Time
	hdr rtp.Header
	pcm []int16 // decoded G.711 payload
	// payload is a copy of any other payload (Opus).
	payload []byte
	// raw is a copy of the payload, G.711's code words included.
	raw []byte
	// from is the packet's source (the appliance's RTP address).
	from netip.AddrPort
}

// rtpPeer is a UDP socket the test owns, put in a SIP offer so that the
// appliance sends its RTP here. It records every packet and can send a
// G.711 stream of its own (which also latches the appliance's symmetric
// RTP onto this socket).
type rtpPeer struct {
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu      sync.Mutex
	packets []rtpPacket
}

func newRTPPeer(t *testing.T) *rtpPeer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	p := &rtpPeer{conn: conn}
	p.wg.Add(1)
	go p.read()
	t.Cleanup(p.close)
	return p
}

func (p *rtpPeer) port() int { return p.conn.LocalAddr().(*net.UDPAddr).Port }

func (p *rtpPeer) close() {
	p.conn.Close()
	p.wg.Wait()
}

func (p *rtpPeer) read() {
	defer p.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		var pkt rtp.Packet
		if pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		r := rtpPacket{at: time.Now(), hdr: pkt.Header, raw: append([]byte(nil), pkt.Payload...), from: from}
		if c, ok := media.CodecByPayloadType(pkt.PayloadType); ok {
			r.pcm = c.DecodeFrame(nil, pkt.Payload)
		} else {
			r.payload = append([]byte(nil), pkt.Payload...)
		}
		p.mu.Lock()
		p.packets = append(p.packets, r)
		p.mu.Unlock()
	}
}

// count is the number of packets received so far.
func (p *rtpPeer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.packets)
}

// received returns a copy of the packets received so far.
func (p *rtpPeer) received() []rtpPacket {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]rtpPacket(nil), p.packets...)
}
