package media

import "errors"

// ErrPortsExhausted is returned by PortPool.Allocate when every RTP/RTCP
// pair of the range is taken.
var ErrPortsExhausted = errors.New("media: rtp port range exhausted")

// ErrMediaTimeout is the cause reported when no RTP arrived for the
// configured media timeout.
var ErrMediaTimeout = errors.New("media: no rtp received")

// ErrClosed is returned by operations on a closed Session or PortPool.
var ErrClosed = errors.New("media: closed")

var (
	errUnknownCodec   = errors.New("unknown codec")
	errBadRate        = errors.New("unsupported sample rate")
	errBadFormat      = errors.New("unsupported audio format")
	errBadPtime       = errors.New("ptime out of range")
	errBadPortRange   = errors.New("bad port range")
	errNoRemote       = errors.New("no remote address")
	errPayloadTooLong = errors.New("payload too long")
	errSRTPSuite      = errors.New("unsupported srtp crypto suite")
	errSRTPKey        = errors.New("bad srtp key length")
	errSRTPLate       = errors.New("srtp cannot start on a plain rtp session")
)
