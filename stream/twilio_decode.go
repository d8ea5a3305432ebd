package stream

import (
	"bytes"
	"encoding/json"
)

// A bot sends a message each 20 ms per call (its audio), so decoding them
// is on every call's path: the messages a bot sends in practice, plain
// JSON objects of plain ASCII strings, are scanned in place without
// reflection or allocation; anything else (an escape, a non-ASCII byte, a
// number, a nested object of a member the stream does not read, a
// duplicate or a differently cased member) goes to encoding/json, whose
// reading stands: the fast path accepts only what encoding/json reads the
// same way (FuzzTwilioDecode holds them together).

// twilioView is what the stream reads of a bot's message; its slices point
// into the message, or into strings encoding/json made.
type twilioView struct {
	event, streamSid []byte
	hasMedia         bool
	payload          []byte
	hasMark          bool
	name             []byte
}

// decodeTwilio reads the bot's message b into v; an error is encoding/json's.
func decodeTwilio(b []byte, v *twilioView) error {
	*v = twilioView{}
	if scanTwilio(b, v) {
		return nil
	}
	*v = twilioView{}
	var in twilioIn
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	v.event, v.streamSid = []byte(in.Event), []byte(in.StreamSid)
	if in.Media != nil {
		v.hasMedia, v.payload = true, []byte(in.Media.Payload)
	}
	if in.Mark != nil {
		v.hasMark, v.name = true, []byte(in.Mark.Name)
	}
	return nil
}

// twilioIn is a message from the bot as encoding/json reads it: only the
// members the stream reads.
type twilioIn struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Media     *struct {
		Payload string `json:"payload"`
	} `json:"media"`
	Mark *struct {
		Name string `json:"name"`
	} `json:"mark"`
}

// scanner reads one JSON text from its start.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c,
// consuming it if so.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (s *scanner) str() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// object reads an object's members with member, which returns false to
// give up.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.next(':') || !member(key) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// Members of a bot's message the fast path reads, by bit.
const (
	memEvent = 1 << iota
	memStreamSid
	memMedia
	memMark
	memPayload
	memName
)

// field is a member the fast path reads: its name and its bit.
type field struct {
	name string
	bit  int
}

var (
	topMembers   = []field{{"event", memEvent}, {"streamSid", memStreamSid}, {"media", memMedia}, {"mark", memMark}}
	mediaMembers = []field{{"payload", memPayload}}
	markMembers  = []field{{"name", memName}}
)

// member reports which of fields key is (its bit), 0 for another member,
// -1 for one encoding/json would take for one of them (it matches
// members without regard to case).
func member(key []byte, fields []field) int {
	for _, f := range fields {
		if string(key) == f.name {
			return f.bit
		}
	}
	for _, f := range fields {
		if bytes.EqualFold(key, []byte(f.name)) {
			return -1
		}
	}
	return 0
}

// scanTwilio is the fast path: false when b is not of the plain form.
func scanTwilio(b []byte, v *twilioView) bool {
	s := scanner{b: b}
	seen := 0
	// once marks bit seen; false for a second time (encoding/json's
	// reading of a duplicate is its own: the last, or merged objects).
	once := func(bit int) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	// inner reads the object of media or mark, whose one member the
	// stream reads is want (into dst).
	inner := func(fields []field, dst *[]byte) bool {
		return s.object(func(key []byte) bool {
			switch bit := member(key, fields); bit {
			case -1:
				return false
			case 0:
				_, ok := s.str()
				return ok
			default:
				if !once(bit) {
					return false
				}
				var ok bool
				*dst, ok = s.str()
				return ok
			}
		})
	}
	ok := s.object(func(key []byte) bool {
		bit := member(key, topMembers)
		switch {
		case bit == -1:
			return false
		case bit == 0:
			_, ok := s.str()
			return ok
		case !once(bit):
			return false
		}
		var ok bool
		switch bit {
		case memEvent:
			v.event, ok = s.str()
		case memStreamSid:
			v.streamSid, ok = s.str()
		case memMedia:
			v.hasMedia, ok = true, inner(mediaMembers, &v.payload)
		case memMark:
			v.hasMark, ok = true, inner(markMembers, &v.name)
		}
		return ok
	})
	s.space()
	return ok && s.i == len(s.b)
}
