package realtime

import (
	"errors"

	"switchboard/jsonerr"
)

// DecodeError is a message Decode cannot take, said in the protocol's
// terms: the member at fault as a dotted path from the event's root
// ("session.audio.input.turn_detection.silence_duration_ms") and the type
// it takes (string, integer, object, …), never a Go type. It wraps
// ErrMalformed.
type DecodeError struct {
	// EventID is the event's event_id, when it could be read.
	EventID string
	// Param is the member at fault; "" for the message as a whole.
	Param string
	// Message says what is wrong.
	Message string
}

func (e *DecodeError) Error() string { return "malformed event: " + e.Message }

// Unwrap returns ErrMalformed.
func (e *DecodeError) Unwrap() error { return errMalformed }

// Detail is the error event's detail that answers the message: an
// invalid_request_error with code invalid_event, the member as param and
// the client's event_id.
func (e *DecodeError) Detail() ErrorDetail {
	return ErrorDetail{Type: ErrorInvalidRequest, Code: "invalid_event", Message: e.Message, Param: e.Param, EventID: e.EventID}
}

// DecodeErrorEvent is the error event that answers a client message
// Decode refused with err: a *DecodeError's detail, or a generic one.
func DecodeErrorEvent(err error) *ErrorEvent {
	var de *DecodeError
	if errors.As(err, &de) {
		return &ErrorEvent{Error: de.Detail()}
	}
	return &ErrorEvent{Error: ErrorDetail{Type: ErrorInvalidRequest, Code: "invalid_event", Message: "the message is not a realtime event"}}
}

// decodeError words the failure to decode msg (an event of type typ, ""
// when unknown) as a *DecodeError.
func decodeError(msg []byte, typ string, err error) *DecodeError {
	de := &DecodeError{EventID: peekEventID(msg)}
	switch {
	case errors.Is(err, errNotObject):
		de.Message = "the message must be a JSON object (a realtime event)"
	case errors.Is(err, errNoType):
		de.Param, de.Message = "type", "the event must have a type member, a string"
	case typ == "":
		de.Message = "the message is not valid JSON"
	default:
		if je := jsonerr.Translate(msg, err); je != nil {
			de.Param, de.Message = je.Path, je.Message
			if je.Path == "" {
				de.Message = typ + ": " + je.Message
			}
		} else {
			de.Message = typ + ": the event does not fit its type's shape"
		}
	}
	return de
}

// peekEventID returns the event_id member of msg when it is a plain
// string ("" otherwise).
func peekEventID(msg []byte) string {
	var id string
	_ = eachField(msg, func(key []byte, plain bool, val []byte, _ bool) bool {
		if plain && string(key) == "event_id" {
			if s, ok := plainString(val); ok {
				id = s
			}
		}
		return true
	})
	return id
}
