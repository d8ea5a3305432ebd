package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type tool struct {
	Name  string  `json:"name"`
	Limit uint8   `json:"limit"`
	Score float32 `json:"score"`
}

type body struct {
	Name    string            `json:"name"`
	ACLs    []string          `json:"acls"`
	N       int               `json:"n"`
	On      *bool             `json:"on"`
	Tools   []tool            `json:"tools"`
	Meta    map[string]int    `json:"meta"`
	Grid    [][]int           `json:"grid"`
	Session *struct{ X int }  `json:"session"`
	Raw     json.RawMessage   `json:"raw"`
	Labels  map[string]string `json:"labels"`
}

// goWords are the Go type names that must never reach a client.
var goWords = []string{"[]string", "struct", "Go ", "int64", "map[", "float64", "uint8", "json:", "unmarshal"}

// TestTranslate: each kind of decoding error is worded in the API's
// terms, with the member's full path (array indices included) and the
// expected type.
func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		doc, path, msg string
	}{
		{`{"acls":"x"}`, "acls", "acls must be an array of strings, not a string"},
		{`{"acls":["a",3]}`, "acls[1]", "acls[1] must be a string, not a number"},
		{`{"name":5}`, "name", "name must be a string, not a number"},
		{`{"n":"x"}`, "n", "n must be an integer, not a string"},
		{`{"n":1.5}`, "n", "n must be an integer, not 1.5"},
		{`{"on":"yes"}`, "on", "on must be a boolean, not a string"},
		{`{"tools":{}}`, "tools", "tools must be an array of objects, not an object"},
		{`{"tools":[{"name":"a"},{"name":true}]}`, "tools[1].name", "tools[1].name must be a string, not a boolean"},
		{`{"tools":[{"limit":1},{"limit":300}]}`, "tools[1].limit", "tools[1].limit must be an integer from 0 to 255, not 300"},
		{`{"tools":[{"limit":-1}]}`, "tools[0].limit", "tools[0].limit must be an integer from 0 to 255, not -1"},
		{`{"tools":[{"score":"x"}]}`, "tools[0].score", "tools[0].score must be a number, not a string"},
		{`{"tools":[{"score":1e300}]}`, "tools[0].score", "tools[0].score is out of range: 1e300"},
		{`{"meta":[]}`, "meta", "meta must be an object, not an array"},
		{`{"meta":{"a":"b"}}`, "meta.a", "meta.a must be an integer, not a string"},
		{`{"grid":[[1],[2,"x"]]}`, "grid[1][1]", "grid[1][1] must be an integer, not a string"},
		{`{"grid":[1]}`, "grid[0]", "grid[0] must be an array of integers, not a number"},
		{`{"session":"x"}`, "session", "session must be an object, not a string"},
		{`{"session":{"X":[1]}}`, "session.X", "session.X must be an integer, not an array"},
		{`[1]`, "", "the value must be an object, not an array"},
		{`{"labels":{"a":1}}`, "labels.a", "labels.a must be a string, not a number"},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			var v body
			err := json.Unmarshal([]byte(tc.doc), &v)
			require.Error(t, err)
			e := Translate([]byte(tc.doc), err)
			require.NotNil(t, e, "%v", err)
			require.Equal(t, tc.path, e.Path)
			require.Equal(t, tc.msg, e.Message)
			for _, w := range goWords {
				require.NotContains(t, e.Message, w)
			}
		})
	}
}

// TestTranslateDecoder: syntax errors, a body that ends too soon and
// unknown members (DisallowUnknownFields) are worded too; an error that
// is not a decoding error is left alone.
func TestTranslateDecoder(t *testing.T) {
	decode := func(doc string) error {
		dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
		dec.DisallowUnknownFields()
		var v body
		return dec.Decode(&v)
	}
	e := Translate([]byte(`{"name":}`), decode(`{"name":}`))
	require.NotNil(t, e)
	require.Contains(t, e.Message, "not valid JSON")
	e = Translate([]byte(`{"name":"a"`), decode(`{"name":"a"`))
	require.NotNil(t, e)
	require.Contains(t, e.Message, "not valid JSON")
	e = Translate([]byte(`{"nme":"a"}`), decode(`{"nme":"a"}`))
	require.NotNil(t, e)
	require.Equal(t, "nme", e.Path)
	require.Equal(t, `unknown field "nme"`, e.Message)
	require.Nil(t, Translate(nil, errors.New("something else")))
	require.Nil(t, Translate(nil, nil))
	own := &Error{Path: "voice", Message: "voice must be a string or an object"}
	require.Same(t, own, Translate(nil, errors.Join(errors.New("x"), own)))
}

func TestTypeName(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"", "string"}, {1, "integer"}, {uint16(1), "integer"}, {1.5, "number"}, {true, "boolean"},
		{[]string{}, "array of strings"}, {[][]int{}, "array of arrays of integers"}, {[]byte{}, "string"},
		{map[string]any{}, "object"}, {struct{}{}, "object"}, {json.Number(""), "number"}, {time.Time{}, "string"},
	} {
		require.Equal(t, tc.want, TypeName(reflect.TypeOf(tc.v)), "%T", tc.v)
	}
	require.Equal(t, "JSON value", TypeName(reflect.TypeFor[json.RawMessage]()))
	require.Equal(t, "string", TypeName(reflect.TypeFor[*string]()))
	require.Equal(t, "an array of strings", Article("array of strings"))
	require.Equal(t, "a number", Article("number"))
}

// FuzzTranslate: whatever the document, decoding it into a typed value
// and translating the error never panics, and the words are the API's:
// no Go type name, and a path that names the member encoding/json meant.
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{`{"acls":"x"}`, `{"tools":[{"name":1}]}`, `{"meta":{"a":"b"}}`, `{"grid":[[1],["x"]]}`, `[1]`, `{"n":1e400}`,
		`{"tools":[{"limit":300}]}`, `{"name":`, `{"session":{"X":"1"}}`, `{"a":{"b":[`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v body
		err := json.Unmarshal([]byte(doc), &v)
		e := Translate([]byte(doc), err)
		if err == nil {
			if e != nil {
				t.Fatalf("an error from none: %v", e)
			}
			return
		}
		if e == nil {
			return // not a decoding error (none here, but not ours to word)
		}
		for _, w := range goWords {
			if bytes.Contains([]byte(e.Message), []byte(w)) {
				t.Fatalf("%q: %q holds %q", doc, e.Message, w)
			}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && stripIndices(e.Path) != te.Field && !strings.HasPrefix(stripIndices(e.Path), te.Field+".") {
			t.Fatalf("%q: path %q is not field %q", doc, e.Path, te.Field)
		}
	})
}
