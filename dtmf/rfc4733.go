package dtmf

import (
	"errors"
	"fmt"
)

// PayloadSize is the size of an RFC 4733 telephone-event payload (one event).
const PayloadSize = 4

var errShortPayload = errors.New("dtmf: telephone-event payload too short")

// Payload is one RFC 4733 section 2.3 telephone-event payload:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	|     event     |E|R| volume    |          duration             |
type Payload struct {
	// Event is the event code (0-9, * = 10, # = 11, A-D = 12-15, 16 = flash).
	Event uint8
	// End is the E bit: set on the final packets of an event.
	End bool
	// Volume is the power level of the tone in -dBm0 (0-63).
	Volume uint8
	// Duration is the length of the event so far, in RTP timestamp units.
	Duration uint16
}

// ParsePayload decodes an RFC 4733 payload. Only the first 4 bytes are read:
// a payload that carries several events (RFC 4733 section 2.5.1.5, redundancy
// through RFC 2198 is negotiated separately) is not expected for DTMF.
func ParsePayload(b []byte) (Payload, error) {
	if len(b) < PayloadSize {
		return Payload{}, fmt.Errorf("%w: %d < %d bytes", errShortPayload, len(b), PayloadSize)
	}
	return Payload{
		Event:    b[0],
		End:      b[1]&0x80 != 0,
		Volume:   b[1] & 0x3f,
		Duration: uint16(b[2])<<8 | uint16(b[3]),
	}, nil
}

// Marshal encodes the payload into 4 bytes (the R bit is always zero).
func (p Payload) Marshal() []byte {
	return p.AppendTo(make([]byte, 0, PayloadSize))
}

// AppendTo appends the 4-byte encoding of the payload to b.
func (p Payload) AppendTo(b []byte) []byte {
	b1 := p.Volume & 0x3f
	if p.End {
		b1 |= 0x80
	}
	return append(b, p.Event, b1, byte(p.Duration>>8), byte(p.Duration))
}
