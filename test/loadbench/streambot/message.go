package main

import "encoding/json"

// message is what the bot reads of Twilio's messages: the slices point
// into the message read (valid until the next one), or into the strings
// encoding/json made of it.
type message struct {
	event, sequenceNumber, streamSid []byte
	// start's
	startStreamSid, callSid []byte
	hasStart                bool
	// media's
	track, chunk, payload []byte
	hasMedia              bool
	// mark's
	name []byte
}

// parse reads b into m. Every media message (50 a second per stream) is
// read in place: the form Twilio's reference shows, a JSON object of
// plain ASCII strings and objects of them, without escapes; anything else
// (start's array and numbers, an escape) goes to encoding/json.
func (m *message) parse(b []byte) error {
	*m = message{}
	s := scanner{b: b}
	if s.object(func(key []byte) bool { return m.top(&s, key) }) {
		if s.space(); s.i == len(b) {
			return nil
		}
	}
	*m = message{}
	return m.parseJSON(b)
}

// top takes one member of the message.
func (m *message) top(s *scanner, key []byte) bool {
	switch string(key) {
	case "event":
		return s.str(&m.event)
	case "sequenceNumber":
		return s.str(&m.sequenceNumber)
	case "streamSid":
		return s.str(&m.streamSid)
	case "media":
		m.hasMedia = true
		return s.object(func(key []byte) bool {
			switch string(key) {
			case "track":
				return s.str(&m.track)
			case "chunk":
				return s.str(&m.chunk)
			case "payload":
				return s.str(&m.payload)
			}
			var skip []byte
			return s.str(&skip) // timestamp
		})
	case "mark":
		return s.object(func(key []byte) bool {
			if string(key) == "name" {
				return s.str(&m.name)
			}
			return false
		})
	}
	return false // start, stop, dtmf: encoding/json
}

// parseJSON reads the messages that are not media with encoding/json.
func (m *message) parseJSON(b []byte) error {
	var in struct {
		Event          string `json:"event"`
		SequenceNumber string `json:"sequenceNumber"`
		StreamSid      string `json:"streamSid"`
		Start          *struct {
			StreamSid string `json:"streamSid"`
			CallSid   string `json:"callSid"`
		} `json:"start"`
		Media *struct {
			Track   string `json:"track"`
			Chunk   string `json:"chunk"`
			Payload string `json:"payload"`
		} `json:"media"`
		Mark *struct {
			Name string `json:"name"`
		} `json:"mark"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	m.event, m.sequenceNumber, m.streamSid = []byte(in.Event), []byte(in.SequenceNumber), []byte(in.StreamSid)
	if in.Start != nil {
		m.hasStart, m.startStreamSid, m.callSid = true, []byte(in.Start.StreamSid), []byte(in.Start.CallSid)
	}
	if in.Media != nil {
		m.hasMedia, m.track, m.chunk, m.payload = true, []byte(in.Media.Track), []byte(in.Media.Chunk), []byte(in.Media.Payload)
	}
	if in.Mark != nil {
		m.name = []byte(in.Mark.Name)
	}
	return nil
}

// scanner reads a JSON object of strings and objects of strings.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes into dst.
func (s *scanner) str(dst *[]byte) bool {
	if !s.next('"') {
		return false
	}
	for start := s.i; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			*dst = s.b[start:s.i]
			s.i++
			return true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return false
		}
	}
	return false
}

// object reads an object, each member's value with member.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		var key []byte
		if !s.str(&key) || !s.next(':') || !member(key) {
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
