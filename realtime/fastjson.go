package realtime

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// This file holds the hand-written JSON paths for the two per-frame events
// (input_audio_buffer.append out, response.output_audio.delta in) and a tiny
// top-level object scanner used to find an event's type without reflection.
// Anything the fast paths do not fully understand (escapes, non-ASCII,
// unexpected members) falls back to encoding/json, so both paths agree.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanString expects b[i] == '"' and returns the index after the closing
// quote and whether the string is plain (no escapes, ASCII only).
func scanString(b []byte, i int) (end int, plain bool, ok bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, plain, true
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return 0, false, false
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return 0, false, false
}

// scanValue returns the index after the JSON value starting at b[i]. Nested
// objects and arrays are skipped by depth counting; their validity is left to
// encoding/json (the fast paths never accept them).
func scanValue(b []byte, i int) (end int, plain bool, ok bool) {
	if i >= len(b) {
		return 0, false, false
	}
	switch b[i] {
	case '"':
		return scanString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _, ok := scanString(b, j)
				if !ok {
					return 0, false, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, false, true
				}
			}
		}
		return 0, false, false
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && !isSpace(b[j]) {
			j++
		}
		return j, false, j > i
	}
}

// eachField calls fn with the raw key (between its quotes) and raw value of
// every top-level member of the object in b, until fn returns false. valPlain
// is true for string values without escapes or non-ASCII bytes.
func eachField(b []byte, fn func(key []byte, keyPlain bool, val []byte, valPlain bool) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if skipSpace(b, i+1) != len(b) {
			return fmt.Errorf("%w: trailing data", errMalformed)
		}
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return fmt.Errorf("%w: expected member name", errMalformed)
		}
		kend, kplain, ok := scanString(b, i)
		if !ok {
			return fmt.Errorf("%w: bad member name", errMalformed)
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return fmt.Errorf("%w: expected ':'", errMalformed)
		}
		i = skipSpace(b, i+1)
		vend, vplain, ok := scanValue(b, i)
		if !ok {
			return fmt.Errorf("%w: bad value", errMalformed)
		}
		if !fn(key, kplain, b[i:vend], vplain) {
			return nil
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return fmt.Errorf("%w: unterminated object", errMalformed)
		}
		if b[i] == '}' {
			if skipSpace(b, i+1) != len(b) {
				return fmt.Errorf("%w: trailing data", errMalformed)
			}
			return nil
		}
		if b[i] != ',' {
			return fmt.Errorf("%w: expected ','", errMalformed)
		}
		i = skipSpace(b, i+1)
	}
}

// peekType returns the "type" member of the event in b.
func peekType(b []byte) (string, error) {
	var typ string
	found, bad := false, false
	err := eachField(b, func(key []byte, plain bool, val []byte, _ bool) bool {
		if !plain || string(key) != "type" {
			return true
		}
		found = true
		if len(val) == 0 || val[0] != '"' {
			bad = true
			return false
		}
		if _, p, _ := scanString(val, 0); p {
			typ = string(val[1 : len(val)-1])
		} else if json.Unmarshal(val, &typ) != nil {
			bad = true
		}
		return true // the last duplicate wins, as in encoding/json
	})
	switch {
	case err != nil:
		return "", err
	case !found || bad || typ == "":
		return "", errNoType
	}
	return typ, nil
}

// plainString returns the contents of a JSON string value without escapes or
// non-ASCII bytes.
func plainString(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	end, plain, ok := scanString(val, 0)
	if !ok || !plain || end != len(val) {
		return "", false
	}
	return string(val[1 : len(val)-1]), true
}

func plainInt(val []byte) (int, bool) {
	digits := val
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(val))
	return n, err == nil
}

// base64Value decodes a plain JSON string value (scanned by scanString:
// no escapes, no control or non-ASCII bytes) as standard base64.
func base64Value(val []byte, plain bool) ([]byte, bool) {
	if !plain || len(val) < 2 || val[0] != '"' {
		return nil, false
	}
	s := val[1 : len(val)-1]
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, false
	}
	return out[:n], true
}

func decodeAppendFast(b []byte) (Event, bool) {
	e := &InputAudioBufferAppend{}
	ok := true
	err := eachField(b, func(key []byte, plain bool, val []byte, vplain bool) bool {
		if !plain {
			ok = false
			return false
		}
		switch string(key) {
		case "type":
			ok = string(val) == `"`+TypeInputAudioBufferAppend+`"`
		case "event_id":
			e.EventID, ok = plainString(val)
		case "audio":
			e.Audio, ok = base64Value(val, vplain)
		default:
			ok = false
		}
		return ok
	})
	return e, ok && err == nil
}

func decodeAudioDeltaFast(b []byte) (Event, bool) {
	e := &ResponseOutputAudioDelta{}
	str := func(_ byte, val []byte) (string, bool) { return plainString(val) }
	return e, decodeAudioDeltaInto(b, e, str)
}

// Fields of an audio delta whose string a decoder makes (decodeAudioDeltaInto).
const (
	fieldEventID    = 'e'
	fieldResponseID = 'r'
	fieldItemID     = 'i'
)

// decodeAudioDeltaInto fills e from the audio delta b: str makes the
// string of a plain string value of one field, and the audio is decoded
// into e.Delta's memory (grown when it is short). It reports whether b
// had the exact shape of a delta (else Decode's general path takes it).
func decodeAudioDeltaInto(b []byte, e *ResponseOutputAudioDelta, str func(field byte, val []byte) (string, bool)) bool {
	ok := true
	err := eachField(b, func(key []byte, plain bool, val []byte, vplain bool) bool {
		if !plain {
			ok = false
			return false
		}
		switch string(key) {
		case "type":
			ok = string(val) == `"`+TypeResponseOutputAudioDelta+`"`
		case "event_id":
			e.EventID, ok = str(fieldEventID, val)
		case "response_id":
			e.ResponseID, ok = str(fieldResponseID, val)
		case "item_id":
			e.ItemID, ok = str(fieldItemID, val)
		case "output_index":
			e.OutputIndex, ok = plainInt(val)
		case "content_index":
			e.ContentIndex, ok = plainInt(val)
		case "delta":
			e.Delta, ok = base64Into(e.Delta[:0], val, vplain)
		default:
			ok = false
		}
		return ok
	})
	return ok && err == nil
}

// base64Into decodes a plain JSON string value as standard base64 into
// dst's memory, allocating only when it is too short.
func base64Into(dst, val []byte, plain bool) ([]byte, bool) {
	if !plain || len(val) < 2 || val[0] != '"' {
		return nil, false
	}
	s := val[1 : len(val)-1]
	n := base64.StdEncoding.DecodedLen(len(s))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	m, err := base64.StdEncoding.Decode(dst[:n], s)
	if err != nil {
		return nil, false
	}
	return dst[:m], true
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // rare: escapes needed
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendBase64(dst, data []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, '"')
}

// AppendAudioEvent appends an input_audio_buffer.append event carrying audio
// (raw bytes in the session's input format) to dst, without reflection. An
// empty eventID is left out.
func AppendAudioEvent(dst []byte, eventID string, audio []byte) []byte {
	dst = append(dst, `{"type":"input_audio_buffer.append"`...)
	if eventID != "" {
		dst = append(dst, `,"event_id":`...)
		dst = appendString(dst, eventID)
	}
	dst = append(dst, `,"audio":`...)
	dst = appendBase64(dst, audio)
	return append(dst, '}')
}

func appendAudioDelta(dst []byte, e *ResponseOutputAudioDelta) []byte {
	dst = append(dst, `{"type":"response.output_audio.delta"`...)
	if e.EventID != "" {
		dst = append(dst, `,"event_id":`...)
		dst = appendString(dst, e.EventID)
	}
	dst = append(dst, `,"response_id":`...)
	dst = appendString(dst, e.ResponseID)
	dst = append(dst, `,"item_id":`...)
	dst = appendString(dst, e.ItemID)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(e.OutputIndex), 10)
	dst = append(dst, `,"content_index":`...)
	dst = strconv.AppendInt(dst, int64(e.ContentIndex), 10)
	dst = append(dst, `,"delta":`...)
	dst = appendBase64(dst, e.Delta)
	return append(dst, '}')
}
