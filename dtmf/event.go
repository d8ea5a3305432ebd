package dtmf

import (
	"time"
)

// Source says how a digit reached the appliance.
type Source uint8

// The three ways a caller's key press can arrive.
const (
	// SourceRTP is an RFC 4733 telephone-event carried in RTP.
	SourceRTP Source = iota + 1
	// SourceINFO is a SIP INFO request with an application/dtmf-relay or
	// application/dtmf body.
	SourceINFO
	// SourceInband is a dual tone detected in the decoded caller audio.
	SourceInband
)

// String returns a short lowercase name, suitable as a log field or metric label.
func (s Source) String() string {
	switch s {
	case SourceRTP:
		return "rtp"
	case SourceINFO:
		return "info"
	case SourceInband:
		return "inband"
	default:
		return "unknown"
	}
}

// Event is one key press, whatever the way it arrived. (Its fields are
// ordered widest first: 40 bytes, where the order of their meaning took 56,
// and every call queues up to 16 of them for its conversation.)
type Event struct {
	// At is when the key press began, as seen by the appliance: the arrival
	// of the first RTP packet of the event, the arrival of the SIP INFO, or
	// the time of the first audio sample of the tone.
	At time.Time
	// Duration is the length of the key press when known at report time: the
	// duration field of the first RTP packet received (often 0), the
	// Duration= of a SIP INFO, or the tone length accepted so far. Zero when
	// unknown.
	Duration time.Duration
	// RTPTimestamp is the RTP timestamp that identifies an RFC 4733 event;
	// zero for other sources.
	RTPTimestamp uint32
	// Digit is one of 0-9, *, #, A-D (ASCII, upper case).
	Digit byte
	// Source is how the digit arrived.
	Source Source
}

// DTMFEventReceived is the payload of the input_audio_buffer.dtmf_event_received
// server event sent to the controller for every key, whatever the agent's policy.
type DTMFEventReceived struct {
	// Type is always "input_audio_buffer.dtmf_event_received".
	Type string `json:"type"`
	// Event is the key as a one-character string ("5", "*", "#").
	Event string `json:"event"`
	// ReceivedAt is when the key press began, in Unix seconds.
	ReceivedAt int64 `json:"received_at"`
}

// DTMFEventReceivedType is the realtime event type that reports one key.
const DTMFEventReceivedType = "input_audio_buffer.dtmf_event_received"

// Notification returns the controller-facing event for this key press.
func (e Event) Notification() DTMFEventReceived {
	return DTMFEventReceived{
		Type:       DTMFEventReceivedType,
		Event:      string(rune(e.Digit)),
		ReceivedAt: e.At.Unix(),
	}
}

// digits lists the keys in RFC 4733 event-code order (codes 0-15).
const digits = "0123456789*#ABCD"

// ValidDigit reports whether d is a DTMF key: 0-9, *, #, A-D (upper case).
func ValidDigit(d byte) bool {
	_, ok := EventCode(d)
	return ok
}

// EventCode returns the RFC 4733 event code of a key (0-9, * = 10, # = 11,
// A-D = 12-15). Lower-case a-d are accepted as A-D.
func EventCode(d byte) (uint8, bool) {
	switch {
	case d >= '0' && d <= '9':
		return d - '0', true
	case d == '*':
		return 10, true
	case d == '#':
		return 11, true
	case d >= 'A' && d <= 'D':
		return 12 + d - 'A', true
	case d >= 'a' && d <= 'd':
		return 12 + d - 'a', true
	}
	return 0, false
}

// DigitForCode returns the key of an RFC 4733 event code; codes above 15
// (flash and the non-DTMF events of RFC 4734) are not keys.
func DigitForCode(code uint8) (byte, bool) {
	if int(code) >= len(digits) {
		return 0, false
	}
	return digits[code], true
}

// normalizeDigit maps a-d to A-D and reports whether the result is a key.
func normalizeDigit(d byte) (byte, bool) {
	code, ok := EventCode(d)
	if !ok {
		return 0, false
	}
	return digits[code], true
}
