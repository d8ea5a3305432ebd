// Package pcap reads the classic libpcap captures the tests and the load
// benchmark replay (sipp's RTP fixtures): Ethernet frames carrying
// IPv4/UDP, most of them RTP. It is the one reader of those files.
package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pion/rtp"
)

// Errors of the reader.
var (
	ErrNotPcap = errors.New("pcap: not a classic microsecond pcap file")
	ErrNotUDP  = errors.New("pcap: not an Ethernet/IPv4/UDP frame")
)

// linkEthernet is the link type of an Ethernet capture.
const linkEthernet = 1

// File is a capture held in memory; frames handed out alias Data, so a
// caller may edit them and write Data back.
type File struct {
	Order binary.ByteOrder
	Data  []byte
}

// Open reads the capture at path.
func Open(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse checks the global header of a capture in b.
func Parse(b []byte) (*File, error) {
	if len(b) < 24 {
		return nil, ErrNotPcap
	}
	var order binary.ByteOrder
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4:
		order = binary.LittleEndian
	case 0xd4c3b2a1:
		order = binary.BigEndian
	default:
		return nil, ErrNotPcap
	}
	if lt := order.Uint32(b[20:]); lt != linkEthernet {
		return nil, fmt.Errorf("%w: link type %d, want Ethernet", ErrNotPcap, lt)
	}
	return &File{Order: order, Data: b}, nil
}

// Frames calls fn with each captured frame and its capture time, in file
// order, until fn returns an error. A truncated last record ends the walk.
func (f *File) Frames(fn func(at time.Time, frame []byte) error) error {
	b := f.Data
	for off := 24; off+16 <= len(b); {
		sec, usec, incl := f.Order.Uint32(b[off:]), f.Order.Uint32(b[off+4:]), int(f.Order.Uint32(b[off+8:]))
		off += 16
		if incl < 0 || off+incl > len(b) {
			return nil
		}
		if err := fn(time.Unix(int64(sec), int64(usec)*1000), b[off:off+incl]); err != nil {
			return err
		}
		off += incl
	}
	return nil
}

// UDP splits an Ethernet frame into its IPv4 header and its UDP datagram
// (header included).
func UDP(frame []byte) (ip, udp []byte, err error) {
	if len(frame) < 14+20+8 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
		return nil, nil, ErrNotUDP
	}
	ip = frame[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[9] != 17 || ihl < 20 || len(ip) < ihl+8 {
		return nil, nil, ErrNotUDP
	}
	return ip[:ihl], ip[ihl:], nil
}

// Packet is one captured RTP packet.
type Packet struct {
	At  time.Time
	RTP rtp.Packet
}

// ReadRTP returns the RTP packets of the capture at path, in capture
// order; frames that are not UDP or not RTP are skipped.
func ReadRTP(path string) ([]Packet, error) {
	f, err := Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Packet
	err = f.Frames(func(at time.Time, frame []byte) error {
		_, udp, err := UDP(frame)
		if err != nil {
			return nil
		}
		var p rtp.Packet
		if p.Unmarshal(udp[8:]) != nil || p.Version != 2 {
			return nil
		}
		out = append(out, Packet{At: at, RTP: p})
		return nil
	})
	return out, err
}
