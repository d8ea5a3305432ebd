package jsonerr

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// locate finds the member encoding/json means by field (its path without
// array indices: "session.tools.name") in doc, and returns its path with
// them ("session.tools[1].name"): the first value, in document order, at
// that path whose kind is kind ("number", "string", "object", …) and, when
// literal is given, whose number is literal. Decoding stops at the first
// value that does not fit, and a value of the same path, kind and number
// before it would not have fitted either, so the first match is the one.
// When doc does not hold one (it is not the text that was decoded, or a
// custom unmarshaler decoded a part of it), field is returned as it is.
func locate(doc []byte, field, kind, literal string) string {
	if len(doc) == 0 {
		return field
	}
	type frame struct {
		obj     bool
		wantKey bool   // in an object: the next string is a key
		path    string // of the container
		key     string // in an object: the current key
		index   int    // in an array: the current element
	}
	var stack []*frame
	child := func() string { // the path of the value starting now
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
	match := func(path, k, lit string) bool {
		if k != kind || (literal != "" && lit != literal) {
			return false
		}
		p := stripIndices(path)
		if p == field {
			return true
		}
		// A map's value: encoding/json names the map, not the key.
		if len(stack) == 0 {
			return false
		}
		top := stack[len(stack)-1]
		return top.obj && p == joinPath(field, top.key)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return field
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.wantKey {
			top.key, top.wantKey = s, false
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '}' || t == ']' {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return field
				}
				done()
				continue
			}
			path, k := child(), "object"
			if t == '[' {
				k = "array"
			}
			if match(path, k, "") {
				return path
			}
			stack = append(stack, &frame{obj: t == '{', wantKey: t == '{', path: path})
			continue
		case string:
			if p := child(); match(p, "string", "") {
				return p
			}
		case json.Number:
			if p := child(); match(p, "number", t.String()) {
				return p
			}
		case bool:
			if p := child(); match(p, "boolean", "") {
				return p
			}
		case nil:
			if p := child(); match(p, "null", "") {
				return p
			}
		}
		if len(stack) == 0 {
			return field
		}
		done()
	}
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// stripIndices drops the array indices of a path: "a[1].b[0]" is "a.b",
// "[2]" is "".
func stripIndices(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '[' {
			j := strings.IndexByte(path[i:], ']')
			if j < 0 {
				break
			}
			i += j
			continue
		}
		b.WriteByte(path[i])
	}
	return b.String()
}
