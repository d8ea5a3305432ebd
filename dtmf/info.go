package dtmf

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Content types of SIP INFO bodies that carry a key press.
const (
	ContentTypeDTMFRelay = "application/dtmf-relay"
	ContentTypeDTMF      = "application/dtmf"
)

// ErrUnsupportedContentType is returned by ParseINFO for a body that is not
// a DTMF body; the SIP layer answers such an INFO with 415.
var ErrUnsupportedContentType = errors.New("dtmf: unsupported INFO content type")

var (
	errNoSignal        = errors.New("dtmf: INFO body has no signal")
	errBadSignal       = errors.New("dtmf: INFO signal is not a DTMF key")
	errBadINFODuration = errors.New("dtmf: INFO duration is not a number of milliseconds")
)

// maxINFODuration bounds Duration= (a key held for a minute is a broken sender).
const maxINFODuration = 60_000

// ParseINFO decodes the body of a SIP INFO request received at now.
//
// application/dtmf-relay (the Cisco format, de facto standard) is a list of
// "Key=Value" lines separated by CRLF or LF; keys are case-insensitive,
// spaces around keys and values are ignored, unknown keys are ignored:
//
//	Signal=5
//	Duration=160
//
// Signal is the key (0-9, *, #, A-D, a-d); as many gateways send event codes
// instead, 10 means *, 11 means # and 12-15 mean A-D, like RFC 4733 codes.
// Duration is in milliseconds and optional (Event.Duration stays 0).
//
// application/dtmf carries only the key, in the same forms as Signal=
// (surrounding whitespace ignored).
//
// The content type may carry parameters and any case. Other content types
// return an error wrapping ErrUnsupportedContentType.
func ParseINFO(contentType string, body []byte, now time.Time) (Event, error) {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	ev := Event{Source: SourceINFO, At: now}
	switch mt {
	case ContentTypeDTMFRelay:
		var haveSignal bool
		for line := range bytes.Lines(body) {
			k, v, ok := bytes.Cut(line, []byte("="))
			if !ok {
				continue
			}
			k = bytes.TrimSpace(k)
			v = bytes.TrimSpace(v)
			switch {
			case bytes.EqualFold(k, []byte("signal")):
				d, err := parseSignal(v)
				if err != nil {
					return Event{}, err
				}
				ev.Digit, haveSignal = d, true
			case bytes.EqualFold(k, []byte("duration")):
				ms, err := strconv.ParseUint(string(v), 10, 32)
				if err != nil || ms > maxINFODuration {
					return Event{}, fmt.Errorf("%w: %q", errBadINFODuration, v)
				}
				ev.Duration = time.Duration(ms) * time.Millisecond
			}
		}
		if !haveSignal {
			return Event{}, errNoSignal
		}
		return ev, nil
	case ContentTypeDTMF:
		d, err := parseSignal(bytes.TrimSpace(body))
		if err != nil {
			return Event{}, err
		}
		ev.Digit = d
		return ev, nil
	default:
		return Event{}, fmt.Errorf("%w: %q", ErrUnsupportedContentType, mt)
	}
}

// parseSignal reads a key or a decimal RFC 4733 event code (0-15).
func parseSignal(v []byte) (byte, error) {
	switch len(v) {
	case 0:
		return 0, errNoSignal
	case 1:
		if d, ok := normalizeDigit(v[0]); ok {
			return d, nil
		}
	case 2:
		if v[0] == '1' && v[1] >= '0' && v[1] <= '5' {
			return digits[10+v[1]-'0'], nil
		}
	}
	return 0, fmt.Errorf("%w: %q", errBadSignal, v)
}
