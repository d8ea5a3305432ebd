package realtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Event is one realtime protocol message, client or server. EventType returns
// the value of its "type" member (for example "session.update").
type Event interface {
	EventType() string
}

// Header holds the members every event carries besides its type. It is
// embedded in every typed event.
type Header struct {
	// EventID is the event's id: optional and client-chosen on client
	// events, always set by the server on server events.
	EventID string `json:"event_id,omitempty"`
}

func (h *Header) header() *Header { return h }

type headed interface {
	Event
	header() *Header
}

// EventID returns the event_id of e, or "" for events without one (and for
// *Unknown).
func EventID(e Event) string {
	if h, ok := e.(headed); ok {
		return h.header().EventID
	}
	return ""
}

// SetEventID sets the event_id of a typed event; it does nothing for *Unknown.
func SetEventID(e Event, id string) {
	if h, ok := e.(headed); ok {
		h.header().EventID = id
	}
}

// Unknown is an event whose type this package does not model (or whose body
// did not fit the typed shape). It is passed through untouched: Encode
// returns Raw byte for byte.
type Unknown struct {
	// Type is the event's "type" member.
	Type string
	// Raw is the whole event as received.
	Raw json.RawMessage
}

// EventType returns u.Type.
func (u *Unknown) EventType() string { return u.Type }

var (
	errNotObject   = errors.New("event is not a JSON object")
	errNoType      = errors.New("event has no string \"type\" member")
	errMalformed   = errors.New("malformed event")
	errUnknownKind = errors.New("event type is not encodable")
)

// ErrMalformed is wrapped by Decode errors (a *DecodeError) for input that
// is not a JSON object with a string "type" member, or a known event whose
// members have the wrong JSON types.
var ErrMalformed = errMalformed

var (
	prefixAudioDelta = []byte(`{"type":"` + TypeResponseOutputAudioDelta + `"`)
	prefixAppend     = []byte(`{"type":"` + TypeInputAudioBufferAppend + `"`)
)

// registry maps a type value to a constructor of its typed event.
var registry = map[string]func() Event{}

func register(types ...func() Event) {
	for _, f := range types {
		registry[f().EventType()] = f
	}
}

// Decode parses one event. Known types give their typed value (a pointer, for
// example *SessionUpdate); any other type gives *Unknown holding a copy of b.
// Decode fails only when b is not a JSON object with a string "type" member,
// or when a known type's members have the wrong JSON types (then
// DecodeLenient still passes it on as *Unknown).
func Decode(b []byte) (Event, error) {
	// Providers put the type first: the per-frame events skip the type scan.
	switch {
	case bytes.HasPrefix(b, prefixAudioDelta):
		if e, ok := decodeAudioDeltaFast(b); ok {
			return e, nil
		}
	case bytes.HasPrefix(b, prefixAppend):
		if e, ok := decodeAppendFast(b); ok {
			return e, nil
		}
	}
	typ, err := peekType(b)
	if err != nil {
		return nil, decodeError(b, "", err)
	}
	switch typ {
	case TypeInputAudioBufferAppend:
		if e, ok := decodeAppendFast(b); ok {
			return e, nil
		}
	case TypeResponseOutputAudioDelta:
		if e, ok := decodeAudioDeltaFast(b); ok {
			return e, nil
		}
	}
	f, ok := registry[typ]
	if !ok {
		if !json.Valid(b) {
			return nil, &DecodeError{EventID: peekEventID(b), Message: typ + ": the message is not valid JSON"}
		}
		return &Unknown{Type: typ, Raw: append(json.RawMessage(nil), b...)}, nil
	}
	e := f()
	if err := json.Unmarshal(b, e); err != nil {
		return nil, decodeError(b, typ, err)
	}
	return e, nil
}

// DecodeLenient is Decode for a relay: a known type whose body does not fit
// its typed shape is returned as *Unknown instead of an error, so nothing a
// peer sends is dropped as long as it is a JSON object with a type.
func DecodeLenient(b []byte) (Event, error) {
	e, err := Decode(b)
	if err == nil {
		return e, nil
	}
	typ, perr := peekType(b)
	if perr != nil || !json.Valid(b) {
		return nil, err
	}
	return &Unknown{Type: typ, Raw: append(json.RawMessage(nil), b...)}, nil
}

// Encode marshals e with its "type" member first.
func Encode(e Event) ([]byte, error) { return AppendEncode(nil, e) }

// AppendEncode appends the encoding of e to dst.
func AppendEncode(dst []byte, e Event) ([]byte, error) {
	switch v := e.(type) {
	case nil:
		return dst, fmt.Errorf("%w: nil", errUnknownKind)
	case *Unknown:
		if len(v.Raw) == 0 {
			return dst, fmt.Errorf("%w: empty unknown event %q", errUnknownKind, v.Type)
		}
		return append(dst, v.Raw...), nil
	case *InputAudioBufferAppend:
		return AppendAudioEvent(dst, v.EventID, v.Audio), nil
	case *ResponseOutputAudioDelta:
		return appendAudioDelta(dst, v), nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return dst, fmt.Errorf("encode %s: %w", e.EventType(), err)
	}
	if len(b) < 2 || b[0] != '{' {
		return dst, fmt.Errorf("%w: %T", errUnknownKind, e)
	}
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, e.EventType())
	if len(b) > 2 {
		dst = append(dst, ',')
	}
	return append(dst, b[1:]...), nil
}
