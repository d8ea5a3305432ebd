package stream

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/google/uuid"

	"switchboard/media"
)

// Asterisk's AudioSocket (https://docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket/):
// a TCP connection of packets, each a one-byte kind, a two-byte payload
// length (big-endian) and the payload. The appliance plays Asterisk's
// part: it connects to the bot, sends the call's UUID, then the caller's
// audio as 16-bit linear PCM at 8 kHz (little-endian) and each key; the
// bot sends audio of the same form, of any length, and may hang up.
const (
	asHangup = 0x00
	asUUID   = 0x01
	asDTMF   = 0x03
	asAudio  = 0x10
	asError  = 0xff
)

// audioSocketWire speaks AudioSocket over TCP.
type audioSocketWire struct {
	conn    net.Conn
	r       *bufio.Reader
	id      uuid.UUID
	timeout time.Duration
	wbuf    []byte
	rbuf    []byte
}

func newAudioSocketWire(conn net.Conn, callID string, o Options) (*audioSocketWire, error) {
	id, err := uuid.Parse(callID)
	if err != nil {
		// A call id is a UUID; anything else gets one derived from it.
		id = uuid.NewSHA1(uuid.NameSpaceURL, []byte(callID))
	}
	return &audioSocketWire{conn: conn, r: bufio.NewReaderSize(conn, 4096), id: id, timeout: o.WriteTimeout}, nil
}

func (a *audioSocketWire) format() media.Format { return media.PCM16(media.ClockRate) }

func (a *audioSocketWire) hello() error { return a.packet(asUUID, a.id[:]) }

func (a *audioSocketWire) write(m *outMsg) error {
	switch m.kind {
	case outMedia:
		if m.track != trackInbound {
			return nil // AudioSocket carries one track
		}
		return a.packet(asAudio, *m.buf)
	case outDTMF:
		return a.packet(asDTMF, []byte{m.digit})
	case outStop:
		return a.packet(asHangup, nil)
	}
	return nil // no marks in AudioSocket
}

func (a *audioSocketWire) packet(kind byte, payload []byte) error {
	b := append(a.wbuf[:0], kind, 0, 0)
	binary.BigEndian.PutUint16(b[1:], uint16(len(payload)))
	b = append(b, payload...)
	a.wbuf = b
	if err := a.conn.SetWriteDeadline(time.Now().Add(a.timeout)); err != nil {
		return err
	}
	_, err := a.conn.Write(b)
	return err
}

func (a *audioSocketWire) read() (inMsg, error) {
	var h [3]byte
	if _, err := io.ReadFull(a.r, h[:]); err != nil {
		return inMsg{}, err
	}
	n := int(binary.BigEndian.Uint16(h[1:]))
	if cap(a.rbuf) < n {
		a.rbuf = make([]byte, n)
	}
	p := a.rbuf[:n]
	if _, err := io.ReadFull(a.r, p); err != nil {
		return inMsg{}, err
	}
	switch h[0] {
	case asAudio:
		if n == 0 || n%2 != 0 {
			return inMsg{}, refuse(refusedAudioSize, "an audio packet of %d bytes (16-bit samples: an even, non-zero length)", n)
		}
		return inMsg{kind: inMedia, payload: p}, nil
	case asHangup:
		return inMsg{kind: inHangup}, nil
	case asError:
		return inMsg{}, fmt.Errorf("the bot reported an error (code % x)", p)
	}
	return inMsg{}, refuse(refusedUnknownKind, "a packet of kind 0x%02x (the bot sends audio 0x10 and hangup 0x00)", h[0])
}

func (a *audioSocketWire) close(string) error { return a.conn.Close() }
