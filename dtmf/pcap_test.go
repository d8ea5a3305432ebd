package dtmf

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// pcapPacket is one captured RTP packet.
type pcapPacket struct {
	at  time.Time
	rtp rtp.Packet
}

// readPcapRTP reads a classic libpcap file (24-byte global header, 16-byte
// record headers, Ethernet/IPv4/UDP) and parses each UDP payload as RTP.
func readPcapRTP(t *testing.T, path string) []pcapPacket {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), 24)
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4:
		bo = binary.LittleEndian
	case 0xd4c3b2a1:
		bo = binary.BigEndian
	default:
		require.Fail(t, "not a microsecond pcap file", path)
	}
	require.Equal(t, uint32(1), bo.Uint32(b[20:]), "link type must be Ethernet")
	var out []pcapPacket
	for off := 24; off+16 <= len(b); {
		sec, usec, incl := bo.Uint32(b[off:]), bo.Uint32(b[off+4:]), int(bo.Uint32(b[off+8:]))
		off += 16
		require.LessOrEqual(t, off+incl, len(b))
		frame := b[off : off+incl]
		off += incl
		payload, err := udpPayload(frame)
		require.NoError(t, err)
		var p rtp.Packet
		require.NoError(t, p.Unmarshal(payload))
		out = append(out, pcapPacket{at: time.Unix(int64(sec), int64(usec)*1000), rtp: p})
	}
	return out
}

func udpPayload(frame []byte) ([]byte, error) {
	if len(frame) < 14+20+8 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
		return nil, errors.New("not Ethernet/IPv4")
	}
	ip := frame[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[9] != 17 || len(ip) < ihl+8 {
		return nil, errors.New("not UDP")
	}
	return ip[ihl+8:], nil
}
