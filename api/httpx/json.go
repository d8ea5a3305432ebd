package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MaxBody is the default bound of a JSON request body (1 MiB).
const MaxBody = 1 << 20

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// Decode reads exactly one JSON object from the request body into v,
// rejecting unknown fields, trailing data and bodies past limit (413).
func Decode(r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "the body must be application/json"}
		}
	}
	if limit <= 0 {
		limit = MaxBody
	}
	body := http.MaxBytesReader(nil, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(err)
		}
		return BadRequest("", "the body must hold a single JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Message: "the body is larger than the limit"}
	case errors.Is(err, io.EOF):
		return BadRequest("", "the body is empty; a JSON object is required")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("", "the body is not valid JSON")
	case errors.As(err, &te):
		return BadRequest(te.Field, "%s must be of type %s", fieldOr(te.Field), te.Type.String())
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return BadRequest(f, "unknown field %q", f)
	}
	return BadRequest("", "invalid body: %v", err)
}

func fieldOr(f string) string {
	if f == "" {
		return "the body"
	}
	return f
}
