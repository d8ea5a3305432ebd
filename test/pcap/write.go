package pcap

import (
	"encoding/binary"
	"os"
	"time"

	"github.com/pion/rtp"
)

// WriteRTP writes a capture of one RTP stream, for sipp's
// play_pcap_audio: one Ethernet/IPv4/UDP frame a payload, ptime apart,
// payload type pt, from 127.0.0.1:5000 to 127.0.0.1:6000 (sipp sends
// them to the peer's media address). The captures the tests make are the
// only ones written, so this stays beside the reader.
func WriteRTP(path string, pt uint8, payloads [][]byte, ptime time.Duration) error {
	var b []byte
	hdr := make([]byte, 24)
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b2c3d4)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 65535)
	binary.LittleEndian.PutUint32(hdr[20:], linkEthernet)
	b = append(b, hdr...)
	start := time.Unix(1_700_000_000, 0)
	ts := uint32(0)
	for i, p := range payloads {
		pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: pt, SequenceNumber: uint16(i), Timestamp: ts, SSRC: 0x5eed, Marker: i == 0}, Payload: p}
		ts += uint32(len(p))
		body, err := pkt.Marshal()
		if err != nil {
			return err
		}
		frame := udpFrame(body)
		at := start.Add(time.Duration(i) * ptime)
		rec := make([]byte, 16)
		binary.LittleEndian.PutUint32(rec[0:], uint32(at.Unix()))
		binary.LittleEndian.PutUint32(rec[4:], uint32(at.Nanosecond()/1000))
		binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
		binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
		b = append(b, rec...)
		b = append(b, frame...)
	}
	return os.WriteFile(path, b, 0o600)
}

// udpFrame wraps a UDP payload in Ethernet, IPv4 (checksummed) and UDP
// (no checksum) headers.
func udpFrame(payload []byte) []byte {
	f := make([]byte, 14+20+8, 14+20+8+len(payload))
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{127, 0, 0, 1})
	copy(ip[16:], []byte{127, 0, 0, 1})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 5000)
	binary.BigEndian.PutUint16(udp[2:], 6000)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	return append(f, payload...)
}
