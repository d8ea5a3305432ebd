package numbers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/api/httpx"
	"switchboard/sip"
	"switchboard/store"
)

// Registration is the API form of a number's outbound registration: the
// account the appliance registers at a registrar (a PBX extension, a
// registration-only carrier) and how that goes. The password is never
// shown.
type Registration struct {
	Registrar     string `json:"registrar"`
	Username      string `json:"username"`
	AuthUsername  string `json:"auth_username,omitempty"`
	ExpiresS      int    `json:"expires_s"`
	Transport     string `json:"transport"`
	ContactUser   string `json:"contact_user"`
	OutboundProxy string `json:"outbound_proxy,omitempty"`
	// State is registered, registering, failed or off.
	State string `json:"state"`
	// ExpiresAt is when the registrar's binding ends (null unless
	// registered).
	ExpiresAt *string `json:"expires_at"`
	// LastStatus is the registrar's last final status (0: none yet).
	LastStatus int    `json:"last_status"`
	LastError  string `json:"last_error,omitempty"`
	// NodeID is the node of the fleet that holds the registration.
	NodeID string `json:"node_id,omitempty"`
}

// registrationBody is the registration object of POST and PATCH. In a
// PATCH the fields present change.
type registrationBody struct {
	Registrar     *string `json:"registrar"`
	Username      *string `json:"username"`
	Password      *string `json:"password"`
	AuthUsername  *string `json:"auth_username"`
	ExpiresS      *int    `json:"expires_s"`
	Transport     *string `json:"transport"`
	ContactUser   *string `json:"contact_user"`
	OutboundProxy *string `json:"outbound_proxy"`
}

func (b *registrationBody) present() func(string) bool {
	return present(map[string]bool{"registrar": b.Registrar != nil, "username": b.Username != nil, "password": b.Password != nil,
		"auth_username": b.AuthUsername != nil, "expires_s": b.ExpiresS != nil, "transport": b.Transport != nil,
		"contact_user": b.ContactUser != nil, "outbound_proxy": b.OutboundProxy != nil})
}

// Limits of a registration.
const (
	DefaultRegisterExpiresS = 300
	MinRegisterExpiresS     = 30
	MaxRegisterExpiresS     = 86400
	MaxRegisterPasswordLen  = 128
)

// applyRegistration writes the registration fields that has reports into
// r (a new one when it has no registrar yet) and checks the result. It
// returns the new password when it changes ("" clears it).
func (s *Service) applyRegistration(r *store.NumberRegistration, b *registrationBody, has func(string) bool) (*string, error) {
	const p = "registration."
	if has("registrar") {
		r.Registrar = deref(b.Registrar)
	}
	if r.Registrar == "" {
		return nil, httpx.BadRequest(p+"registrar", "registration.registrar is required: the registrar's SIP URI, e.g. sip:pbx.example.com:5060")
	}
	if err := s.checkRegistrarURI(p+"registrar", r.Registrar); err != nil {
		return nil, err
	}
	if has("outbound_proxy") {
		r.OutboundProxy = deref(b.OutboundProxy)
	}
	if r.OutboundProxy != "" {
		if err := s.checkRegistrarURI(p+"outbound_proxy", r.OutboundProxy); err != nil {
			return nil, err
		}
	}
	if has("transport") {
		r.Transport = strings.ToLower(deref(b.Transport))
	}
	switch r.Transport {
	case "":
		r.Transport = "udp"
	case "udp", "tcp", "tls":
	default:
		return nil, httpx.BadRequest(p+"transport", "registration.transport must be udp, tcp or tls")
	}
	if has("username") {
		r.Username = deref(b.Username)
	}
	if r.Username == "" {
		return nil, httpx.BadRequest(p+"username", "registration.username is required: the account (the user of the address of record)")
	}
	if len(r.Username) > MaxUsernameLen || !userRE.MatchString(r.Username) {
		return nil, httpx.BadRequest(p+"username", "registration.username must be 1 to %d characters allowed in a SIP URI user part", MaxUsernameLen)
	}
	if has("auth_username") {
		r.AuthUsername = deref(b.AuthUsername)
	}
	if r.AuthUsername != "" && (len(r.AuthUsername) > MaxUsernameLen || !userRE.MatchString(r.AuthUsername)) {
		return nil, httpx.BadRequest(p+"auth_username", "registration.auth_username must be 1 to %d characters allowed in a SIP URI user part", MaxUsernameLen)
	}
	if has("contact_user") {
		r.ContactUser = deref(b.ContactUser)
	}
	if r.ContactUser == "" {
		r.ContactUser = r.Username
	}
	if len(r.ContactUser) > MaxUsernameLen || !userRE.MatchString(r.ContactUser) {
		return nil, httpx.BadRequest(p+"contact_user", "registration.contact_user must be 1 to %d characters allowed in a SIP URI user part", MaxUsernameLen)
	}
	if has("expires_s") && b.ExpiresS != nil {
		r.ExpiresS = *b.ExpiresS
	}
	if r.ExpiresS == 0 {
		r.ExpiresS = DefaultRegisterExpiresS
	}
	if r.ExpiresS < MinRegisterExpiresS || r.ExpiresS > MaxRegisterExpiresS {
		return nil, httpx.BadRequest(p+"expires_s", "registration.expires_s must be %d to %d seconds", MinRegisterExpiresS, MaxRegisterExpiresS)
	}
	var password *string
	if has("password") {
		pw := ""
		if b.Password != nil {
			pw = *b.Password // passwords keep their spaces
		}
		if n := utf8.RuneCountInString(pw); n > MaxRegisterPasswordLen || hasControl(pw) {
			return nil, httpx.BadRequest(p+"password", "registration.password must be at most %d printable characters", MaxRegisterPasswordLen)
		}
		password = &pw
	}
	r.BindingKey = bindingKey(r)
	return password, nil
}

// checkRegistrarURI checks a registrar's or proxy's URI and its host
// against the address policy.
func (s *Service) checkRegistrarURI(param, uri string) error {
	host, err := sip.CheckRegistrarURI(uri)
	if err != nil {
		return httpx.BadRequest(param, "%s must be a SIP URI sip:host[:port] with no user part or parameters: %v", param, err)
	}
	if err := s.checkHost(host); err != nil {
		return httpx.BadRequest(param, "%s must not name a link-local or cloud metadata address (%v); the setting webhooks.allow_addresses can allow it", param, err)
	}
	return nil
}

// bindingKey names the binding a registration makes at its registrar:
// numbers with the same registrar, transport, proxy, account and contact
// share one registration.
func bindingKey(r *store.NumberRegistration) string {
	h := sha256.Sum256([]byte(strings.Join([]string{strings.ToLower(r.Registrar), r.Transport, strings.ToLower(r.OutboundProxy),
		r.Username, r.AuthUsername, r.ContactUser}, "\x00")))
	return hex.EncodeToString(h[:16])
}

func registrationAAD(numberID string) string {
	return "phone_number:" + numberID + ":registration_password"
}

// sealRegistration seals a changed password ("" clears it).
func (s *Service) sealRegistration(r *store.NumberRegistration, password *string) error {
	switch {
	case password == nil:
	case *password == "":
		r.PasswordEnc = ""
	default:
		enc, err := s.seal(*password, registrationAAD(r.NumberID))
		if err != nil {
			return err
		}
		r.PasswordEnc = enc
	}
	return nil
}

// checkShared refuses a registration whose contact user another number's
// registration binds for another account or another team, or that shares
// a binding with numbers whose password differs: one contact routes to
// one account of one team.
func (s *Service) checkShared(ctx context.Context, st store.Store, teamID string, r *store.NumberRegistration) error {
	others, err := st.Registrations().ByContact(ctx, r.ContactUser)
	if err != nil {
		return fmt.Errorf("check registration: %w", err)
	}
	mine, err := s.open(r.PasswordEnc, registrationAAD(r.NumberID))
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.NumberID == r.NumberID {
			continue
		}
		if o.TeamID != teamID {
			return httpx.Conflict("registration.contact_user", "registration.contact_user %q is the contact of another registration: give this one a contact_user of its own",
				r.ContactUser)
		}
		if o.BindingKey != r.BindingKey {
			return httpx.Conflict("registration.contact_user", "registration.contact_user %q is the contact of number %s's registration to another account: give this one a contact_user of its own",
				r.ContactUser, o.PhoneNumber)
		}
		theirs, err := s.open(o.PasswordEnc, registrationAAD(o.NumberID))
		if err != nil {
			return err
		}
		if theirs != mine {
			return httpx.Conflict("registration.password", "number %s registers the same account with the same contact, with another password: numbers that share a registration share its password",
				o.PhoneNumber)
		}
	}
	return nil
}

// putRegistration applies a registration object (nil: remove it) to
// number n inside a write; the registration manager picks the change up.
func (s *Service) putRegistration(ctx context.Context, st store.Store, n *store.PhoneNumber, b *registrationBody, has func(string) bool, remove bool) error {
	if remove {
		if err := st.Registrations().Delete(ctx, n.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
	r, err := st.Registrations().Get(ctx, n.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r = &store.NumberRegistration{NumberID: n.ID}
	case err != nil:
		return err
	}
	password, err := s.applyRegistration(r, b, has)
	if err != nil {
		return err
	}
	if err := s.sealRegistration(r, password); err != nil {
		return err
	}
	if err := s.checkShared(ctx, st, n.TeamID, r); err != nil {
		return err
	}
	r.UpdateTime = s.now().UTC()
	return st.Registrations().Put(ctx, r)
}

// registrationView is the API form of number id's registration (nil when
// it has none).
func registrationView(ctx context.Context, st store.Store, id string) (*Registration, error) {
	r, err := st.Registrations().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read registration of %s: %w", id, err)
	}
	v := &Registration{Registrar: r.Registrar, Username: r.Username, AuthUsername: r.AuthUsername, ExpiresS: r.ExpiresS,
		Transport: r.Transport, ContactUser: r.ContactUser, OutboundProxy: r.OutboundProxy, State: store.RegistrationOff}
	b, err := st.Registrations().Binding(ctx, r.BindingKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("read registration of %s: %w", id, err)
	}
	if b.State != "" {
		v.State = b.State
	}
	v.LastStatus, v.LastError, v.NodeID = b.LastStatus, b.LastError, b.NodeID
	if !b.Expires.IsZero() && b.State == store.RegistrationRegistered {
		at := b.Expires.UTC().Format(time.RFC3339)
		v.ExpiresAt = &at
	}
	return v, nil
}

// Binding is one registration the appliance keeps at a registrar, with
// the numbers that share it (the oldest first). It holds the password:
// never log it.
type Binding struct {
	// Key names the binding (store.NumberRegistration.BindingKey).
	Key string
	sip.Binding
	// NumberIDs are the numbers' ids, in the order of Binding.Numbers.
	NumberIDs []string
}

// Bindings returns every registration to keep, with its password opened:
// the registration manager's view of the numbers.
func (s *Service) Bindings(ctx context.Context) ([]*Binding, error) {
	regs, err := s.st.Registrations().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Binding
	byKey := map[string]*Binding{}
	for _, r := range regs {
		b := byKey[r.BindingKey]
		if b == nil {
			pw, err := s.open(r.PasswordEnc, registrationAAD(r.NumberID))
			if err != nil {
				return nil, fmt.Errorf("registration of %s: %w", r.NumberID, err)
			}
			b = &Binding{Key: r.BindingKey, Binding: sip.Binding{Registrar: r.Registrar, Transport: r.Transport, OutboundProxy: r.OutboundProxy,
				Username: r.Username, AuthUsername: r.AuthUsername, Password: pw, ContactUser: r.ContactUser,
				Expires: time.Duration(r.ExpiresS) * time.Second}}
			byKey[r.BindingKey] = b
			out = append(out, b)
		}
		// Numbers sharing a binding may ask for different intervals: the
		// shortest holds for all.
		b.Expires = min(b.Expires, time.Duration(r.ExpiresS)*time.Second)
		b.Numbers = append(b.Numbers, r.PhoneNumber)
		b.NumberIDs = append(b.NumberIDs, r.NumberID)
	}
	return out, nil
}
