// Package jsonerr says what went wrong with a JSON document in the API's
// terms. encoding/json reports a value of the wrong type with Go's names
// ("cannot unmarshal number into Go struct field SessionUpdate.session.instructions
// of type string", "acls must be of type []string"); Translate turns such an
// error into the member's dotted path from the document's root, with its
// array indices ("session.tools[1].name"), and the type the API expects in
// the words of its reference: string, integer, number, boolean, object,
// array of strings.
//
// Every decoder that reads JSON from a client (api/httpx's strict body
// decoding, the realtime event decoder, the WebSocket message readers)
// reports through it, so no error a client sees names a Go type.
package jsonerr

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Error is a JSON document that does not fit what the API expects.
type Error struct {
	// Path is the member at fault, dotted from the document's root, with
	// array indices ("session.tools[1].name"); "" is the document itself
	// (or no member in particular, for a syntax error).
	Path string
	// Message says what is wrong and what was expected, naming Path.
	Message string
}

func (e *Error) Error() string { return e.Message }

// Translate returns err in the API's terms when it is an error of
// decoding doc: a value of the wrong type (or out of range), JSON that is
// not valid or ends too soon, or a member the target does not know (a
// decoder with DisallowUnknownFields). doc is the text that was decoded:
// it gives the array indices that encoding/json leaves out of its paths.
// Any other error (one a custom unmarshaler returned, already in the API's
// terms) gives nil.
func Translate(doc []byte, err error) *Error {
	var (
		te *json.UnmarshalTypeError
		se *json.SyntaxError
		je *Error
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &je):
		return je
	case errors.As(err, &te):
		return typeError(doc, te)
	case errors.As(err, &se):
		return &Error{Message: fmt.Sprintf("not valid JSON: %s (at byte %d)", se.Error(), se.Offset)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Message: "not valid JSON: it ends too soon"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if u, uerr := strconv.Unquote(f); uerr == nil {
			f = u
		}
		return &Error{Path: f, Message: fmt.Sprintf("unknown field %q", f)}
	}
	return nil
}

// typeError words a type mismatch: "session.instructions must be a
// string, not a number".
func typeError(doc []byte, te *json.UnmarshalTypeError) *Error {
	got, literal, _ := strings.Cut(te.Value, " ")
	path := locate(doc, te.Field, kindOf(got), literal)
	name := path
	if name == "" {
		name = "the value"
	}
	want := TypeName(te.Type)
	if want == "integer" && literal != "" {
		if _, err := strconv.ParseInt(literal, 10, 64); err != nil && !integral(literal) {
			return &Error{Path: path, Message: fmt.Sprintf("%s must be an integer, not %s", name, literal)}
		}
		if lo, hi, ok := intRange(te.Type); ok {
			return &Error{Path: path, Message: fmt.Sprintf("%s must be an integer from %s to %s, not %s", name, lo, hi, literal)}
		}
	}
	if want == "number" && literal != "" {
		return &Error{Path: path, Message: fmt.Sprintf("%s is out of range: %s", name, literal)}
	}
	return &Error{Path: path, Message: fmt.Sprintf("%s must be %s, not %s", name, Article(want), Article(kindOf(got)))}
}

// integral reports whether a JSON number literal has no fraction or
// exponent (an integer too large for int64 is still an integer).
func integral(literal string) bool { return !strings.ContainsAny(literal, ".eE") }

// intRange gives the bounds of an integer type, in decimal.
func intRange(t reflect.Type) (lo, hi string, ok bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "", "", false
	}
	bits := t.Bits
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := bits()
		return strconv.FormatInt(-1<<(n-1), 10), strconv.FormatInt(1<<(n-1)-1, 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "0", strconv.FormatUint(math.MaxUint64>>(64-bits()), 10), true
	}
	return "", "", false
}

// kindOf names a JSON value kind as encoding/json reports it ("bool",
// "number", …) in the API's words.
func kindOf(v string) string {
	switch v {
	case "bool":
		return "boolean"
	case "":
		return "value"
	}
	return v
}

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumber      = reflect.TypeFor[json.Number]()
	rawMessage      = reflect.TypeFor[json.RawMessage]()
)

// TypeName is the API's name of the JSON a Go type takes: string,
// integer, number, boolean, object, "array of strings", "array of
// objects"; "JSON value" for a type that takes any.
func TypeName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == nil, t == rawMessage:
		return "JSON value"
	case t == jsonNumber:
		return "number"
	case t.Kind() != reflect.String && reflect.PointerTo(t).Implements(textUnmarshaler):
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "string" // base64
		}
		return "array of " + plural(TypeName(t.Elem()))
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "JSON value"
}

// plural is the plural of a type name: "strings", "arrays of objects".
func plural(name string) string {
	if rest, ok := strings.CutPrefix(name, "array of "); ok {
		return "arrays of " + rest
	}
	if name == "JSON value" {
		return "JSON values"
	}
	return name + "s"
}

// Article puts "a" or "an" before a type name: "a string", "an object",
// "an array of strings".
func Article(name string) string {
	if name == "" {
		return name
	}
	switch name[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + name
	}
	return "a " + name
}
