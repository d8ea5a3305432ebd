package pcap

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// capture builds a little-endian Ethernet capture of UDP datagrams.
func capture(payloads ...[]byte) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint32(b, 65535)
	b = le.AppendUint32(b, linkEthernet)
	for i, p := range payloads {
		frame := make([]byte, 14, 14+20+8+len(p))
		frame[12], frame[13] = 0x08, 0x00
		ip := make([]byte, 20)
		ip[0], ip[9] = 0x45, 17
		frame = append(frame, ip...)
		frame = append(frame, 0x13, 0x88, 0x13, 0x89, byte((8+len(p))>>8), byte(8+len(p)), 0, 0)
		frame = append(frame, p...)
		b = le.AppendUint32(b, uint32(1000+i))
		b = le.AppendUint32(b, 500)
		b = le.AppendUint32(b, uint32(len(frame)))
		b = le.AppendUint32(b, uint32(len(frame)))
		b = append(b, frame...)
	}
	return b
}

func TestReadRTP(t *testing.T) {
	pk := func(seq uint16) []byte {
		b, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 8, SequenceNumber: seq, Timestamp: 160 * uint32(seq)}, Payload: []byte{1, 2, 3}}).Marshal()
		return b
	}
	path := filepath.Join(t.TempDir(), "x.pcap")
	require.NoError(t, os.WriteFile(path, capture(pk(1), []byte("not rtp"), pk(2)), 0o600))
	got, err := ReadRTP(path)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, uint16(2), got[1].RTP.SequenceNumber)
	require.Equal(t, []byte{1, 2, 3}, got[0].RTP.Payload)
	require.Equal(t, time.Unix(1000, 500000), got[0].At)

	_, err = Parse([]byte("not a capture at all, no"))
	require.ErrorIs(t, err, ErrNotPcap)
	_, _, err = UDP([]byte{1, 2, 3})
	require.ErrorIs(t, err, ErrNotUDP)
}

func FuzzParse(f *testing.F) {
	f.Add(capture([]byte{0x80, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := Parse(b)
		if err != nil {
			return
		}
		_ = pf.Frames(func(_ time.Time, frame []byte) error {
			_, _, _ = UDP(frame)
			return nil
		})
	})
}

func TestWriteRTPReadsBack(t *testing.T) {
	path := t.TempDir() + "/w.pcap"
	payloads := [][]byte{bytes.Repeat([]byte{0xff}, 160), bytes.Repeat([]byte{0x7f}, 160), bytes.Repeat([]byte{0x01}, 160)}
	require.NoError(t, WriteRTP(path, 0, payloads, 20*time.Millisecond))
	pkts, err := ReadRTP(path)
	require.NoError(t, err)
	require.Len(t, pkts, 3)
	for i, p := range pkts {
		require.Equal(t, payloads[i], p.RTP.Payload)
	}
}
