package usage

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"switchboard/store"
)

// Filter keeps the calls whose Field equals Value (or differs from it,
// when Not is set).
type Filter struct {
	Field string
	Not   bool
	Value string
}

var errBadFilter = errors.New("invalid filter")

// ParseFilter reads one filter: field="value" or field!="value", where
// field is phone_number, route or ended_by and value is a double-quoted
// string with backslash escapes (\" \\ \n \u00e9 …). Spaces around the
// operator are allowed.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	rest := strings.TrimSpace(s)
	n := strings.IndexFunc(rest, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z') })
	if n <= 0 {
		return f, fmt.Errorf(`%w %q: want field="value" or field!="value"`, errBadFilter, s)
	}
	f.Field, rest = rest[:n], strings.TrimLeft(rest[n:], " \t")
	if dimensions[f.Field] == nil {
		return f, fmt.Errorf("%w %q: unknown field %q (known: %s)", errBadFilter, s, f.Field, strings.Join(dimensionNames, ", "))
	}
	switch {
	case strings.HasPrefix(rest, "!="):
		f.Not, rest = true, rest[2:]
	case strings.HasPrefix(rest, "="):
		rest = rest[1:]
	default:
		return f, fmt.Errorf("%w %q: the operator must be = or !=", errBadFilter, s)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, `"`) {
		return f, fmt.Errorf("%w %q: the value must be a double-quoted string", errBadFilter, s)
	}
	v, err := strconv.Unquote(rest)
	if err != nil {
		return f, fmt.Errorf("%w %q: the value is not a well-formed quoted string", errBadFilter, s)
	}
	f.Value = v
	return f, nil
}

// String is the filter in its request form.
func (f Filter) String() string {
	op := "="
	if f.Not {
		op = "!="
	}
	return f.Field + op + strconv.Quote(f.Value)
}

// match reports whether c passes f.
func (f Filter) match(c *store.CallSpan) bool {
	return (dimensions[f.Field](c) == f.Value) != f.Not
}
