package sip

import (
	"fmt"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// NormalizeNumber turns a called number as it arrives in a Request-URI or
// To user part into E.164 ("+14155550100"), following the rule in the
// package documentation. trunkPrefix may be empty; country is an ISO 3166
// region such as "US" or "GB".
func NormalizeNumber(raw, trunkPrefix, country string) (string, error) {
	s := raw
	for _, scheme := range []string{"sips:", "sip:", "tel:"} {
		if len(s) >= len(scheme) && strings.EqualFold(s[:len(scheme)], scheme) {
			s = s[len(scheme):]
			break
		}
	}
	if i := strings.IndexAny(s, "@;?"); i >= 0 {
		s = s[:i]
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && i == 0:
			b.WriteRune(r)
		case strings.ContainsRune(" -.()/", r):
		default:
			return "", fmt.Errorf("%w: %q", errBadNumber, raw)
		}
	}
	s = b.String()
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "00"):
		s = s[2:]
	default:
		if trunkPrefix != "" && strings.HasPrefix(s, trunkPrefix) && len(s) > len(trunkPrefix) {
			s = s[len(trunkPrefix):]
		}
		if s == "" || len(s) > 15 {
			return "", fmt.Errorf("%w: %q", errBadNumber, raw)
		}
		num, err := phonenumbers.Parse(s, strings.ToUpper(country))
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v", errBadNumber, raw, err)
		}
		s = strings.TrimPrefix(phonenumbers.Format(num, phonenumbers.E164), "+")
	}
	if s == "" || len(s) > 15 || s[0] == '0' {
		return "", fmt.Errorf("%w: %q", errBadNumber, raw)
	}
	return "+" + s, nil
}
