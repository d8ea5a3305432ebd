package media

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// FuzzSessionPackets sends arbitrary datagrams to the RTP and RTCP ports
// of two running sessions (PCM and passthrough), from the address their
// SDP named, over loopback: the first byte picks the session (bit 1) and
// the port (bit 0), the rest is the datagram. The sessions' readers parse
// and take them (jitter buffer, events, statistics, RTCP reports) while
// their media goroutines run; a panic kills the fuzzing process, and the
// sessions must still answer Stats after each datagram. It keeps to its
// own file so that work on the session's latching rules does not meet it.
func FuzzSessionPackets(f *testing.F) {
	pcmu := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: 1, Timestamp: 160, SSRC: 0x1234}, Payload: make([]byte, 160)}
	event := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 101, Marker: true, SequenceNumber: 2, Timestamp: 320, SSRC: 0x1234}, Payload: []byte{5, 0x8a, 0, 160}}
	cn := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: PayloadTypeCN, SequenceNumber: 3, Timestamp: 480, SSRC: 0x1234}, Payload: []byte{40}}
	for _, p := range []rtp.Packet{pcmu, event, cn} {
		b, err := p.Marshal()
		require.NoError(f, err)
		f.Add(append([]byte{0}, b...))
		f.Add(append([]byte{2}, b...))
	}
	sr := &rtcp.SenderReport{SSRC: 0x1234, NTPTime: 1 << 32, RTPTime: 160, PacketCount: 1, OctetCount: 160,
		Reports: []rtcp.ReceptionReport{{SSRC: 0x9999, FractionLost: 10, TotalLost: 3, LastSequenceNumber: 7, Jitter: 20, LastSenderReport: 5, Delay: 9}}}
	sdes := &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: 0x1234, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "fuzz"}}}}}
	for _, pkts := range [][]rtcp.Packet{{sr, sdes}, {&rtcp.ReceiverReport{SSRC: 0x1234}}, {&rtcp.Goodbye{Sources: []uint32{0x1234}}}} {
		b, err := rtcp.Marshal(pkts)
		require.NoError(f, err)
		f.Add(append([]byte{1}, b...))
		f.Add(append([]byte{3}, b...))
	}
	f.Add([]byte{0, 0x80})
	f.Add([]byte{1, 0x81, 0xc8, 0, 0})

	sender, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(f, err)
	f.Cleanup(func() { _ = sender.Close() })
	from := sender.LocalAddr().(*net.UDPAddr).AddrPort()

	// Each fuzzing process (the coordinator and every worker) runs this
	// setup at once: take both pairs of a 4-port range in one go, so that
	// two processes never find the same range free and then race for it.
	var pairs [2]*PortPair
	for base := 41000; base < 60000 && pairs[1] == nil; base += 8 {
		p, err := NewPortPool(loopback, base, base+3)
		if err != nil {
			continue
		}
		a, err := p.Allocate()
		if err != nil {
			continue
		}
		b, err := p.Allocate()
		if err != nil {
			a.Close()
			continue
		}
		pairs = [2]*PortPair{a, b}
	}
	require.NotNil(f, pairs[1], "no free RTP port range")
	var sessions [2]*Session
	for i, pcm := range []bool{true, false} {
		s, err := NewSession(pairs[i], SessionOptions{
			Remote: from, MediaTimeout: time.Hour,
			OnEvent: func(*rtp.Header, []byte) {},
		})
		require.NoError(f, err)
		// One session's consumer takes PCM, the other's the code words.
		if pcm {
			_, err = s.Listen(PCM16(24000), func([]byte) {})
		} else {
			_, err = s.Listen(FormatPCMU, func([]byte) {})
		}
		require.NoError(f, err)
		sessions[i] = s
		f.Cleanup(func() { _ = s.Close() })
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 1400 {
			return
		}
		s := sessions[(data[0]>>1)&1]
		port := s.LocalPort() + int(data[0]&1)
		_, err := sender.WriteToUDPAddrPort(data[1:], netip.AddrPortFrom(loopback, uint16(port)))
		require.NoError(t, err)
		_ = s.Stats()
	})
}
