package numbers

import (
	"switchboard/webhook"

	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Endpoint is the ACL endpoint name of the phone-number routes.
const Endpoint = "phone-numbers"

// errNoSealer means secrets cannot be stored because no Sealer was given.
var errNoSealer = errors.New("no sealer configured for secrets at rest")

// Service is the phone-numbers module of the API and the SIP and webhook
// layers' way to read a number's route and secrets.
type Service struct {
	st        store.Store
	sipHost   string
	pool      []string
	sealer    Sealer
	newSecret func() string
	now       func() time.Time
	addrs     webhook.AddressPolicy
	changes   chan<- struct{}
}

// NewService returns the phone-numbers module over st.
func NewService(st store.Store, opts Options) *Service {
	s := &Service{st: st, sipHost: opts.SIPHost, sealer: opts.Sealer, newSecret: opts.NewWebhookSecret, now: opts.Now, addrs: opts.Addresses,
		changes: opts.RegistrationChanges}
	if s.newSecret == nil {
		s.newSecret = DefaultWebhookSecret
	}
	if s.now == nil {
		s.now = time.Now
	}
	seen := map[string]bool{}
	for _, d := range opts.Pool {
		e, ok := NormalizeE164(d)
		if !ok {
			opts.Log.Warn().Str("did", d).Msg("number pool entry is not a valid E.164 number; ignored")
			continue
		}
		if !seen[e] {
			seen[e] = true
			s.pool = append(s.pool, e)
		}
	}
	return s
}

// Pool returns the normalized DIDs svc_provisioned numbers come from.
func (s *Service) Pool() []string { return append([]string(nil), s.pool...) }

// Routes are the /v2/phone-numbers routes.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodPost, Pattern: "/v2/phone-numbers", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.create},
		{Method: http.MethodGet, Pattern: "/v2/phone-numbers", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.list},
		{Method: http.MethodGet, Pattern: "/v2/phone-numbers/{id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.get},
		{Method: http.MethodPatch, Pattern: "/v2/phone-numbers/{id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.update},
		{Method: http.MethodDelete, Pattern: "/v2/phone-numbers/{id}", Endpoint: Endpoint, Access: httpx.APIKey, Handler: s.delete},
	}
}

// getOwned reads number id of the caller's team: another team's number is
// as unknown as a missing one.
func getOwned(ctx context.Context, st store.Store, id string) (*store.PhoneNumber, error) {
	n, err := st.Numbers().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && n.TeamID != httpx.TeamOf(ctx)) {
		return nil, httpx.NotFound("no phone number %s", id)
	}
	return n, err
}

// checkAgent requires agent id to exist in the caller's team.
func checkAgent(ctx context.Context, st store.Store, id string) error {
	return checkAgentAs(ctx, st, id, "agent_id")
}

// checkAgentAs is checkAgent for the field param.
func checkAgentAs(ctx context.Context, st store.Store, id, param string) error {
	a, err := st.Agents().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.TeamID != httpx.TeamOf(ctx)) {
		return httpx.BadRequest(param, "no agent %s", id)
	}
	return err
}

// allocate picks the first pool DID that no number uses, filtered by
// areaCode when it is set. It runs inside the creating transaction.
func (s *Service) allocate(ctx context.Context, st store.Store, areaCode string) (string, error) {
	for _, d := range s.pool {
		if areaCode != "" && (len(d) < 5 || d[:2] != "+1" || d[2:5] != areaCode) {
			continue
		}
		_, err := st.Numbers().ByNumber(ctx, d)
		if errors.Is(err, store.ErrNotFound) {
			return d, nil
		}
		if err != nil {
			return "", fmt.Errorf("allocate number: %w", err)
		}
	}
	e := &httpx.Error{Status: http.StatusConflict, Code: "pool_exhausted", Message: "no number of the pool is free"}
	if areaCode != "" {
		e.Param, e.Message = "area_code", "no number of the pool is free in area code "+areaCode
	}
	return "", e
}

// registrationsChanged tells the registration manager that numbers
// changed.
func (s *Service) registrationsChanged() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// seal encrypts a secret for its place aad.
func (s *Service) seal(plain, aad string) (string, error) {
	if s.sealer == nil {
		return "", errNoSealer
	}
	v, err := s.sealer.Seal([]byte(plain), aad)
	if err != nil {
		return "", fmt.Errorf("seal %s: %w", aad, err)
	}
	return v, nil
}

// open decrypts a sealed secret; an empty value opens to "".
func (s *Service) open(sealed, aad string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	if s.sealer == nil {
		return "", errNoSealer
	}
	b, err := s.sealer.Open(sealed, aad)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", aad, err)
	}
	return string(b), nil
}

func passwordAAD(numberID string) string { return "phone_number:" + numberID + ":auth_password" }
func secretAAD(webhookID string) string  { return "webhook:" + webhookID + ":signing_secret" }
func tokenAAD(webhookID string) string   { return "webhook:" + webhookID + ":auth_token" }

// storeErr maps a store error of a write to the API error.
func storeErr(op string, err error) error {
	var he *httpx.Error
	switch {
	case errors.As(err, &he):
		return err
	case errors.Is(err, store.ErrConflict):
		return httpx.Conflict("phone_number", "this phone number is already registered")
	}
	return fmt.Errorf("%s: %w", op, err)
}
