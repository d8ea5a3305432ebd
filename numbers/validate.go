package numbers

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"switchboard/api/httpx"
	"switchboard/sip"
	"switchboard/store"
)

// Origins of a number.
const (
	OriginProvisioned = "svc_provisioned"
	OriginBYOTrunk    = "byo_trunk"
)

// Limits of a number's fields.
const (
	MaxNameLen          = 200
	MaxAllowedAddresses = 100
	MinPasswordLen      = 8
	MaxPasswordLen      = 128
	MaxUsernameLen      = 128
	MaxURLLen           = 2048
	MaxAuthTokenLen     = 4096
)

// NormalizeE164 checks that s is a valid E.164 number (spaces, dashes,
// dots and parentheses allowed) and returns its canonical +E.164 form.
func NormalizeE164(s string) (string, bool) {
	clean := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '.', '(', ')', '\t':
			return -1
		}
		return r
	}, s)
	if !strings.HasPrefix(clean, "+") || len(clean) < 3 || len(clean) > 16 {
		return "", false
	}
	for _, r := range clean[1:] {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	n, err := phonenumbers.Parse(clean, "ZZ")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return "", false
	}
	return phonenumbers.Format(n, phonenumbers.E164), true
}

func checkE164(param, s string) (string, error) {
	e, ok := NormalizeE164(s)
	if !ok {
		return "", httpx.BadRequest(param, "%q is not a valid E.164 phone number (e.g. +14155550100)", s)
	}
	return e, nil
}

func checkName(param, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", httpx.BadRequest(param, "%s is required", param)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return "", httpx.BadRequest(param, "%s is longer than %d characters", param, MaxNameLen)
	case hasControl(name):
		return "", httpx.BadRequest(param, "%s holds control characters", param)
	}
	return name, nil
}

var areaCodeRE = regexp.MustCompile(`^[2-9][0-9]{2}$`)

func checkAreaCode(s string) error {
	if !areaCodeRE.MatchString(s) {
		return httpx.BadRequest("area_code", "area_code must be a 3-digit US area code such as 415")
	}
	return nil
}

// userRE is the user production of RFC 3261 (25.1): unreserved, escaped
// and user-unreserved characters.
var userRE = regexp.MustCompile(`^([A-Za-z0-9\-_.!~*'()&=+$,;?/]|%[0-9A-Fa-f]{2})+$`)

func checkUsername(u string) error {
	if len(u) > MaxUsernameLen || !userRE.MatchString(u) {
		return httpx.BadRequest("sip_auth.auth_username",
			"auth_username must be 1 to %d characters allowed in a SIP URI user part (no spaces, ':' or '@')", MaxUsernameLen)
	}
	return nil
}

func checkPassword(p string) error {
	n := utf8.RuneCountInString(p)
	if n < MinPasswordLen || n > MaxPasswordLen || hasControl(p) {
		return httpx.BadRequest("sip_auth.auth_password",
			"auth_password must be %d to %d printable characters", MinPasswordLen, MaxPasswordLen)
	}
	return nil
}

// checkCIDRs parses allowed source ranges; a bare address is a host
// prefix. The result is masked and deduplicated.
func checkCIDRs(list []string) ([]string, error) {
	if len(list) > MaxAllowedAddresses {
		return nil, httpx.BadRequest("sip_auth.allowed_addresses", "at most %d allowed_addresses", MaxAllowedAddresses)
	}
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, s := range list {
		p, ok := parsePrefix(s)
		if !ok {
			return nil, httpx.BadRequest("sip_auth.allowed_addresses["+strconv.Itoa(i)+"]",
				"%q is not a CIDR range (e.g. 203.0.113.0/24) or an IP address", s)
		}
		if c := p.String(); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

func parsePrefix(s string) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// checkURL requires an absolute http or https URL with a host.
func checkURL(param, s string) error {
	u, err := url.Parse(s)
	if err != nil || len(s) > MaxURLLen || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return httpx.BadRequest(param, "%s must be an absolute http or https URL", param)
	}
	return nil
}

func checkAuthToken(t string) error {
	if len(t) > MaxAuthTokenLen || hasControl(t) {
		return httpx.BadRequest("webhook.auth_token", "auth_token must be at most %d printable characters", MaxAuthTokenLen)
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// checkInband reads dtmf_inband: "" (follow the agent, else auto when no
// telephone-event was negotiated), auto, on or off; case-insensitive.
func checkInband(v string) (string, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "", "auto", "on", "off":
		return v, nil
	}
	return "", httpx.BadRequest("dtmf_inband", "dtmf_inband must be auto, on or off")
}

// checkSRTP reads srtp: "" (the appliance's rtp.srtp), off, optional or
// required; case-insensitive.
func checkSRTP(v string) (string, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "", "off", "optional", "required":
		return v, nil
	}
	return "", httpx.BadRequest("srtp", "srtp must be off, optional or required")
}

// checkCodecs reads codecs: null or [] (the best codec both sides have),
// or codec names from sip.CodecNames, best first, each once; canonical
// spelling is kept.
func checkCodecs(v []string) ([]string, error) {
	if len(v) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(v))
	for i, c := range v {
		j := slices.IndexFunc(sip.CodecNames, func(n string) bool { return strings.EqualFold(n, strings.TrimSpace(c)) })
		if j < 0 {
			return nil, httpx.BadRequest(fmt.Sprintf("codecs[%d]", i), "codec %q is not one of %v", c, sip.CodecNames)
		}
		if slices.Contains(out, sip.CodecNames[j]) {
			return nil, httpx.BadRequest(fmt.Sprintf("codecs[%d]", i), "codec %s is listed twice", sip.CodecNames[j])
		}
		out = append(out, sip.CodecNames[j])
	}
	return out, nil
}

// checkWebhookAddresses refuses a webhook whose URLs name a forbidden
// address (link-local, cloud metadata) under the service's policy.
func (s *Service) checkWebhookAddresses(w *store.Webhook) error {
	for _, f := range []struct{ param, url string }{{"webhook.url", w.URL}, {"webhook.auth_url", w.AuthURL}} {
		if f.url == "" {
			continue
		}
		if err := s.addrs.CheckURL(f.url); err != nil {
			return httpx.BadRequest(f.param, "%s must not target a link-local or cloud metadata address (%v); the setting webhooks.allow_addresses can allow it", f.param, err)
		}
	}
	return nil
}
