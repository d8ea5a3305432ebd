package auth

import (
	"errors"
	"fmt"
	"strings"
)

const (
	aclPrefix   = "api-key:"
	aclEndpoint = "endpoint"
	aclModel    = "model"
	// ACLWildcard is the name that grants every endpoint or every model.
	ACLWildcard = "*"

	maxEndpointName = 64
	maxModelName    = 128
)

// ErrInvalidACL is wrapped by every ACL parse error; the HTTP layer maps it
// to 400.
var ErrInvalidACL = errors.New("invalid acl")

// ACLKind is what an ACL grants access to.
type ACLKind int

const (
	// ACLEndpoint grants an endpoint ("api-key:endpoint:<name>").
	ACLEndpoint ACLKind = iota + 1
	// ACLModel grants a model ("api-key:model:<name>").
	ACLModel
)

// String returns the kind as spelled in ACL strings.
func (k ACLKind) String() string {
	switch k {
	case ACLEndpoint:
		return aclEndpoint
	case ACLModel:
		return aclModel
	default:
		return "invalid"
	}
}

// ACL is one parsed permission.
type ACL struct {
	// Kind is endpoint or model.
	Kind ACLKind
	// Name is the endpoint or model name, or [ACLWildcard].
	Name string
}

// String returns the canonical ACL string, e.g. "api-key:model:*".
func (a ACL) String() string {
	return aclPrefix + a.Kind.String() + ":" + a.Name
}

// IsWildcard reports whether the ACL grants every endpoint or every model.
func (a ACL) IsWildcard() bool { return a.Name == ACLWildcard }

// ParseACL parses one ACL string. Accepted forms are
// "api-key:endpoint:<name>" and "api-key:model:<name>", with "*" as the name
// granting everything of that kind. Endpoint names must be one of
// [Endpoints]; model names are 1 to 128 characters of letters, digits and
// "._-/:+@", starting with a letter or digit. Matching is case-sensitive.
// Errors wrap [ErrInvalidACL] and quote the offending string.
func ParseACL(s string) (ACL, error) {
	rest, ok := strings.CutPrefix(s, aclPrefix)
	if !ok {
		return ACL{}, fmt.Errorf("%w %q: must start with %q", ErrInvalidACL, s, aclPrefix)
	}
	kind, name, ok := strings.Cut(rest, ":")
	if !ok {
		return ACL{}, fmt.Errorf("%w %q: want api-key:endpoint:<name> or api-key:model:<name>", ErrInvalidACL, s)
	}
	switch kind {
	case aclEndpoint:
		if name != ACLWildcard && !IsEndpoint(name) {
			return ACL{}, fmt.Errorf("%w %q: unknown endpoint %q (known: %s, or *)", ErrInvalidACL, s, name, strings.Join(EndpointNames(), ", "))
		}
		return ACL{Kind: ACLEndpoint, Name: name}, nil
	case aclModel:
		if name != ACLWildcard && !validModelName(name) {
			return ACL{}, fmt.Errorf("%w %q: model name must be 1-%d characters of letters, digits and ._-/:+@, starting with a letter or digit", ErrInvalidACL, s, maxModelName)
		}
		return ACL{Kind: ACLModel, Name: name}, nil
	default:
		return ACL{}, fmt.Errorf("%w %q: kind %q is neither %q nor %q", ErrInvalidACL, s, kind, aclEndpoint, aclModel)
	}
}

// ParseACLs parses every string, returning all problems joined, so a create
// request can report every bad entry at once.
func ParseACLs(ss []string) ([]ACL, error) {
	out := make([]ACL, 0, len(ss))
	var errs []error
	for _, s := range ss {
		a, err := ParseACL(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, a)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func validModelName(s string) bool {
	if len(s) == 0 || len(s) > maxModelName || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			continue
		}
		switch c {
		case '.', '_', '-', '/', ':', '+', '@':
		default:
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return isBase62(c) }

// ACLSet is a key's parsed permissions, ready to answer allow questions. The
// zero value allows nothing. An ACLSet is immutable and safe for concurrent
// use.
type ACLSet struct {
	allEndpoints, allModels bool
	endpoints, models       map[string]struct{}
}

// NewACLSet parses a key's ACL strings. Any invalid entry is an error (the
// caller then refuses the request: fail closed). An empty list yields a set
// that allows nothing.
func NewACLSet(acls []string) (ACLSet, error) {
	parsed, err := ParseACLs(acls)
	if err != nil {
		return ACLSet{}, err
	}
	var s ACLSet
	for _, a := range parsed {
		switch {
		case a.Kind == ACLEndpoint && a.IsWildcard():
			s.allEndpoints = true
		case a.Kind == ACLModel && a.IsWildcard():
			s.allModels = true
		case a.Kind == ACLEndpoint:
			if s.endpoints == nil {
				s.endpoints = make(map[string]struct{})
			}
			s.endpoints[a.Name] = struct{}{}
		case a.Kind == ACLModel:
			if s.models == nil {
				s.models = make(map[string]struct{})
			}
			s.models[a.Name] = struct{}{}
		}
	}
	return s, nil
}

// AllowsEndpoint reports whether the set grants the named endpoint.
func (s ACLSet) AllowsEndpoint(name string) bool {
	if s.allEndpoints {
		return true
	}
	_, ok := s.endpoints[name]
	return ok
}

// AllowsModel reports whether the set grants the named model.
func (s ACLSet) AllowsModel(name string) bool {
	if s.allModels {
		return true
	}
	_, ok := s.models[name]
	return ok
}

// AnyModel reports whether the set grants at least one model.
func (s ACLSet) AnyModel() bool { return s.allModels || len(s.models) > 0 }

// Allows reports whether a request to endpoint, naming model (empty when the
// request names none), is permitted: the endpoint must be granted and, when a
// model is named, the model too. An empty set allows nothing.
func (s ACLSet) Allows(endpoint, model string) bool {
	if !s.AllowsEndpoint(endpoint) {
		return false
	}
	return model == "" || s.AllowsModel(model)
}

// MatchesFilter reports whether a key holding acls matches the list
// endpoint's aclFilters: the key must hold every filter string (AND, as the
// spec combines filters elsewhere), compared literally (no
// normalisation). A filter selects keys by what they were granted, not by what
// they could reach: "api-key:model:gpt" does not match a key that holds only
// "api-key:model:*". No filters match every key.
func MatchesFilter(acls []string, filters []string) bool {
	for _, f := range filters {
		found := false
		for _, a := range acls {
			if a == f {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
