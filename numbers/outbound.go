package numbers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"switchboard/api/httpx"
	"switchboard/sip"
	"switchboard/store"
)

// OutboundTrunk is the API form of a number's outbound trunk: where the
// calls it places (POST /v1/calls) go. The password is never shown.
type OutboundTrunk struct {
	// URI is the carrier's trunk, sip:host[:port][;transport=udp|tcp|tls]
	// or sips:host[:port]:
	// each call's Request-URI is the called number at this host.
	URI string `json:"uri"`
	// AuthUsername answers the carrier's digest challenge (401/407) with
	// the password set beside it.
	AuthUsername string `json:"auth_username,omitempty"`
	// CallerID is the From user of the INVITEs; absent: the number.
	CallerID string `json:"caller_id,omitempty"`
}

// outboundBody is the outbound_trunk object of POST and PATCH. In a
// PATCH the fields present change; auth_username and auth_password come
// together (both "" clears them).
type outboundBody struct {
	URI          *string `json:"uri"`
	AuthUsername *string `json:"auth_username"`
	AuthPassword *string `json:"auth_password"`
	CallerID     *string `json:"caller_id"`
}

// Limits of an outbound trunk.
const maxCallerIDLen = 64

// applyOutbound writes the outbound_trunk fields that has reports into n
// and returns the new digest password when the credentials change (""
// clears them).
func (s *Service) applyOutbound(n *store.PhoneNumber, b *outboundBody, has func(string) bool) (*string, error) {
	o := &n.Outbound
	if has("uri") {
		o.URI = deref(b.URI)
	}
	if o.URI == "" {
		return nil, httpx.BadRequest("outbound_trunk.uri", "outbound_trunk.uri is required: the carrier's trunk, e.g. sip:sip.carrier.example:5060")
	}
	host, err := sip.CheckTrunkURI(o.URI)
	if err != nil {
		return nil, httpx.BadRequest("outbound_trunk.uri", "outbound_trunk.uri must be sip:host[:port] with an optional ;transport=udp|tcp|tls, or sips:host[:port], and no user part: %v", err)
	}
	if err := s.checkHost(host); err != nil {
		return nil, httpx.BadRequest("outbound_trunk.uri", "outbound_trunk.uri must not name a link-local or cloud metadata address (%v); the setting webhooks.allow_addresses can allow it", err)
	}
	if has("caller_id") {
		id := deref(b.CallerID)
		if id != "" {
			if e, ok := NormalizeE164(id); ok {
				id = e
			} else if len(id) > maxCallerIDLen || !userRE.MatchString(id) {
				return nil, httpx.BadRequest("outbound_trunk.caller_id", "caller_id must be an E.164 number or a SIP user part of at most %d characters", maxCallerIDLen)
			}
		}
		o.CallerID = id
	}
	var password *string
	uHas, pHas := has("auth_username"), has("auth_password")
	if uHas != pHas {
		missing := "outbound_trunk.auth_password"
		if pHas {
			missing = "outbound_trunk.auth_username"
		}
		return nil, httpx.BadRequest(missing, "auth_username and auth_password must be given together")
	}
	if uHas {
		u, p := deref(b.AuthUsername), ""
		if b.AuthPassword != nil {
			p = *b.AuthPassword
		}
		switch {
		case u == "" && p == "":
			o.Username = ""
		case u == "":
			return nil, httpx.BadRequest("outbound_trunk.auth_username", "auth_username and auth_password must be given together")
		case p == "":
			return nil, httpx.BadRequest("outbound_trunk.auth_password", "auth_username and auth_password must be given together")
		default:
			if len(u) > MaxUsernameLen || !userRE.MatchString(u) {
				return nil, httpx.BadRequest("outbound_trunk.auth_username",
					"auth_username must be 1 to %d characters allowed in a SIP URI user part", MaxUsernameLen)
			}
			if err := checkPassword(p); err != nil {
				return nil, httpx.BadRequest("outbound_trunk.auth_password", "auth_password must be %d to %d printable characters", MinPasswordLen, MaxPasswordLen)
			}
			o.Username = u
		}
		password = &p
	}
	return password, nil
}

// checkHost refuses a host that is a forbidden address under the
// service's policy (names are checked when they are dialed).
func (s *Service) checkHost(host string) error {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return nil
	}
	return s.addrs.CheckAddr(a)
}

// sealOutbound stores a changed outbound password sealed ("" clears it).
func (s *Service) sealOutbound(n *store.PhoneNumber, password *string) error {
	switch {
	case password == nil:
	case *password == "":
		n.Outbound.PasswordEnc = ""
	default:
		enc, err := s.seal(*password, outboundAAD(n.ID))
		if err != nil {
			return err
		}
		n.Outbound.PasswordEnc = enc
	}
	return nil
}

func outboundAAD(numberID string) string {
	return "phone_number:" + numberID + ":outbound_password"
}

// outboundView is the API form of n's trunk (nil when it has none).
func outboundView(n *store.PhoneNumber) *OutboundTrunk {
	if n.Outbound.URI == "" {
		return nil
	}
	return &OutboundTrunk{URI: n.Outbound.URI, AuthUsername: n.Outbound.Username, CallerID: n.Outbound.CallerID}
}

// errNotTeams means a number exists but belongs to another team.
var errNotTeams = errors.New("phone number of another team")

// Origination is what placing a call from a number needs: its route and
// its outbound trunk with the decrypted password. Never log it.
type Origination struct {
	// Resolved is the number as an inbound call would see it (its route,
	// webhook with secrets, recording, …).
	*Resolved
	// TrunkURI is "" when the number has no outbound trunk.
	TrunkURI string
	// AuthUsername and AuthPassword answer the trunk's challenge.
	AuthUsername, AuthPassword string
	// CallerID is the From user of the INVITE (the number when unset).
	CallerID string
}

// Originate reads the number a team places a call from, by its E.164
// (any common formatting): ErrUnknownNumber when the team has no such
// number.
func (s *Service) Originate(ctx context.Context, teamID, e164 string) (*Origination, error) {
	r, err := s.Resolve(ctx, e164)
	if err != nil {
		return nil, err
	}
	if r.TeamID != teamID {
		return nil, fmt.Errorf("originate %s: %w: %w", e164, ErrUnknownNumber, errNotTeams)
	}
	n, err := s.st.Numbers().Get(ctx, r.NumberID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("originate %s: %w", e164, ErrUnknownNumber)
	}
	if err != nil {
		return nil, fmt.Errorf("originate %s: %w", e164, err)
	}
	o := &Origination{Resolved: r, TrunkURI: n.Outbound.URI, AuthUsername: n.Outbound.Username, CallerID: n.Outbound.CallerID}
	if o.CallerID == "" {
		o.CallerID = r.E164
	}
	if o.AuthPassword, err = s.open(n.Outbound.PasswordEnc, outboundAAD(n.ID)); err != nil {
		return nil, fmt.Errorf("originate %s: %w", e164, err)
	}
	return o, nil
}
