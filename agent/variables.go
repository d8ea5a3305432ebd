package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Vars are the variables of one call by their full names: the call's
// facts (caller.number, caller.name, called.number, call.id), each header
// the call kept at admission (sip.<Header-Name>), and the call's own
// (variables.<NAME>: a context_url's answer, or POST /v1/calls). An
// agent's instructions and greeting name them as {{caller.number}},
// {{sip.X-Account-Id}}, {{variables.plan}}; custom tools receive them.
type Vars map[string]string

// Names of the call's facts, and the prefixes of the other variables.
const (
	VarCallerNumber = "caller.number"
	VarCallerName   = "caller.name"
	VarCalledNumber = "called.number"
	VarCallID       = "call.id"
	// VarSIP prefixes a header the call kept: sip.X-Account-Id. Header
	// names match case-insensitively.
	VarSIP = "sip."
	// VarOwn prefixes the call's own variables: variables.plan.
	VarOwn = "variables."
)

// facts are the variables every call defines (possibly empty).
var facts = map[string]bool{VarCallerNumber: true, VarCallerName: true, VarCalledNumber: true, VarCallID: true}

// Lookup returns the value of the variable name; a sip.* name matches the
// header's name whatever its case.
func (v Vars) Lookup(name string) (string, bool) {
	if s, ok := v[name]; ok {
		return s, true
	}
	if len(name) > len(VarSIP) && strings.EqualFold(name[:len(VarSIP)], VarSIP) {
		for k, s := range v {
			if strings.EqualFold(k, name) {
				return s, true
			}
		}
	}
	return "", false
}

// placeholderRE matches one {{ name }}: a name made of a header name's
// characters (RFC 3261 token) and dots, spaces allowed inside the braces.
var placeholderRE = regexp.MustCompile("\\{\\{\\s*([A-Za-z0-9_.!%*+`'~-]+)\\s*\\}\\}")

// Render replaces each {{name}} of text by the variable's value. A name
// the call does not define renders empty and is listed in missing (once,
// in the order met). Text without placeholders comes back as it is.
func (v Vars) Render(text string) (out string, missing []string) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	seen := map[string]bool{}
	out = placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		name := placeholderRE.FindStringSubmatch(m)[1]
		if s, ok := v.Lookup(name); ok {
			return s
		}
		if !seen[name] {
			seen[name] = true
			missing = append(missing, name)
		}
		return ""
	})
	return out, missing
}

// HasPlaceholders reports whether text names a variable: such a text is
// rendered per call (a greeting with one is not cached ahead).
func HasPlaceholders(text string) bool { return placeholderRE.MatchString(text) }

// CheckTemplate checks that every {{name}} of text is a variable a call
// can define: one of the call's facts, sip.<Header-Name> or
// variables.<NAME>.
func CheckTemplate(text string) error {
	for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
		name := m[1]
		switch {
		case facts[name]:
		case strings.HasPrefix(strings.ToLower(name), VarSIP) && len(name) > len(VarSIP) && !strings.Contains(name[len(VarSIP):], "."):
		case strings.HasPrefix(name, VarOwn) && variableNameRE.MatchString(name[len(VarOwn):]):
		default:
			return fmt.Errorf("{{%s}} is not a variable: use caller.number, caller.name, called.number, call.id, sip.<Header-Name> or variables.<NAME>", name)
		}
	}
	return nil
}

// Limits of a call's own variables (variables.<NAME>).
const (
	MaxVariables      = 64
	MaxVariableValue  = 4096
	MaxVariablesBytes = 16 << 10
)

// variableNameRE is the name of a call's own variable.
var variableNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// VariableError says which of a call's own variables is refused and why.
type VariableError struct {
	// Name is the variable's name ("" when the set as a whole is refused).
	Name    string
	Problem string
}

func (e *VariableError) Error() string {
	if e.Name == "" {
		return "variables: " + e.Problem
	}
	return "variables." + e.Name + ": " + e.Problem
}

// Param is the API field of the refused variable: variables.NAME.
func (e *VariableError) Param() string {
	if e.Name == "" {
		return "variables"
	}
	return "variables." + e.Name
}

// ErrNotVariables means a JSON value is not an object of variables.
var ErrNotVariables = errors.New("variables must be an object of names to strings, numbers or booleans")

// ParseVariables reads a call's own variables from a JSON object whose
// values are strings, numbers or booleans (a number keeps its JSON text,
// null is the empty string). An empty or null raw is no variables. The
// error is a *VariableError naming the refused variable.
func ParseVariables(raw json.RawMessage) (map[string]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &VariableError{Problem: ErrNotVariables.Error()}
	}
	if len(m) > MaxVariables {
		return nil, &VariableError{Problem: fmt.Sprintf("at most %d variables", MaxVariables)}
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, len(m))
	total := 0
	for _, name := range names {
		if !variableNameRE.MatchString(name) {
			return nil, &VariableError{Name: name, Problem: "a variable's name is 1 to 64 letters, digits, _ or -"}
		}
		v, err := scalar(m[name])
		if err != nil {
			return nil, &VariableError{Name: name, Problem: err.Error()}
		}
		switch {
		case !utf8.ValidString(v):
			return nil, &VariableError{Name: name, Problem: "not valid UTF-8"}
		case len(v) > MaxVariableValue:
			return nil, &VariableError{Name: name, Problem: fmt.Sprintf("longer than %d bytes", MaxVariableValue)}
		}
		if total += len(name) + len(v); total > MaxVariablesBytes {
			return nil, &VariableError{Problem: fmt.Sprintf("more than %d bytes of names and values", MaxVariablesBytes)}
		}
		out[name] = v
	}
	return out, nil
}

// scalar is a JSON string, number or boolean as text.
func scalar(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", errors.New("no value")
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errors.New("not a valid string")
		}
		return s, nil
	case string(raw) == "null":
		return "", nil
	case string(raw) == "true", string(raw) == "false":
		return string(raw), nil
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", errors.New("not a valid number")
		}
		return n.String(), nil
	}
	return "", errors.New("must be a string, a number or a boolean")
}
