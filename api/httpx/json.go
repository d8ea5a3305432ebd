package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchboard/jsonerr"
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
// rejecting a media type other than JSON and a charset other than UTF-8
// (415), bytes that are not UTF-8, a key given twice in one object (which
// of the two would count is a guess that attackers exploit when two
// parsers disagree), unknown fields, trailing data (400) and bodies past
// limit (413). The body is read as JSON when its content type is JSON,
// absent, or curl's default for -d (application/x-www-form-urlencoded),
// as hosted APIs do; a body that is then not JSON is a 400.
func Decode(r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json") && mt != "application/x-www-form-urlencoded") {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "the body must be JSON (Content-Type: application/json)", Param: "Content-Type"}
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Param: "Content-Type",
				Message: fmt.Sprintf("the body must be UTF-8 JSON; charset %q is not accepted", cs)}
		}
	}
	if limit <= 0 {
		limit = MaxBody
	}
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		return decodeError(nil, err)
	}
	if !utf8.Valid(raw) {
		return BadRequest("", "the body is not valid UTF-8")
	}
	if path, dup := duplicateKey(raw); dup {
		return BadRequest(path, "%s is given more than once", path)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(raw, err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return decodeError(nil, err)
		}
		return BadRequest("", "the body must hold a single JSON object")
	}
	return nil
}

// decodeError words an error of decoding raw in the API's terms (the
// member's path and the type it takes; see package jsonerr).
func decodeError(raw []byte, err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Message: "the body is larger than the limit"}
	case errors.Is(err, io.EOF):
		return BadRequest("", "the body is empty; a JSON object is required")
	}
	if je := jsonerr.Translate(raw, err); je != nil {
		msg := je.Message
		if je.Path == "" {
			msg = "the body: " + msg
			if strings.HasPrefix(je.Message, "the value ") {
				msg = "the body " + strings.TrimPrefix(je.Message, "the value ")
			}
		}
		return BadRequest(je.Path, "%s", msg)
	}
	return BadRequest("", "the body does not fit this endpoint")
}

// duplicateKey reports the first key that appears twice in one object of
// the first JSON value of b, as a path ("webhook.url", "tools[1].name").
// Text that is not JSON has none: the decoder reports it.
func duplicateKey(b []byte) (string, bool) {
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool   // in an object: the next string is a key
		path    string // of the container
		key     string // in an object: the current key
		index   int    // in an array: the current element
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*frame
	child := func() string { // the path of the value being read
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.obj {
			if f.path == "" {
				return f.key
			}
			return f.path + "." + f.key
		}
		return f.path + "[" + strconv.Itoa(f.index) + "]"
	}
	done := func() { // a value ended in the current container
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.obj {
			f.wantKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{obj: t == '{', keys: map[string]bool{}, wantKey: t == '{', path: child()})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return "", false
				}
				done()
			}
		case string:
			if top != nil && top.obj && top.wantKey {
				top.key, top.wantKey = t, false
				if top.keys[t] {
					return child(), true
				}
				top.keys[t] = true
				continue
			}
			done()
		default:
			done()
		}
		if len(stack) == 0 {
			return "", false
		}
	}
}
