package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// Client secret lifetimes (the spec's limits).
const (
	// DefaultClientSecretTTL is the lifetime of a secret whose request
	// names none.
	DefaultClientSecretTTL = 600 * time.Second
	// MaxClientSecretTTL is the longest lifetime a secret may have.
	MaxClientSecretTTL = 3600 * time.Second
)

// ErrClientSecretTTL is returned by Issue for a lifetime outside 1 s ..
// MaxClientSecretTTL.
var ErrClientSecretTTL = errors.New("client secret lifetime must be 1 to 3600 seconds")

// ClientSecret is a validated client secret: who made it and the session
// configuration stored with it.
type ClientSecret struct {
	ID     string
	TeamID string
	// KeyID is the API key that created the secret.
	KeyID string
	// Session is the stored session configuration (JSON); nil: none.
	Session   json.RawMessage
	ExpiresAt time.Time
	// AllowsModel reports whether the creating key's ACL grants a model
	// now: a secret never reaches further than its creator.
	AllowsModel func(model string) bool
}

// ClientSecrets issues and checks ephemeral realtime client secrets. Only
// the hash of a secret is stored, with its team, the key that made it,
// its expiry and its session configuration.
type ClientSecrets struct {
	st     store.Store
	now    func() time.Time
	tokens *TokenMeter
}

// WithTokenMeter makes Check refuse (429) a secret whose creating key is
// over its tpm limit on m; it returns s.
func (s *ClientSecrets) WithTokenMeter(m *TokenMeter) *ClientSecrets {
	s.tokens = m
	return s
}

// NewClientSecrets returns the client secret service over st; now is the
// clock (nil: time.Now).
func NewClientSecrets(st store.Store, now func() time.Time) *ClientSecrets {
	if now == nil {
		now = time.Now
	}
	return &ClientSecrets{st: st, now: now}
}

// Issue makes a secret for the caller p that lives ttl (0: the default)
// and carries session (nil: none). The value is returned once; only its
// hash is kept.
func (s *ClientSecrets) Issue(ctx context.Context, p *httpx.Principal, ttl time.Duration, session json.RawMessage) (value string, expiresAt time.Time, err error) {
	if ttl == 0 {
		ttl = DefaultClientSecretTTL
	}
	if ttl < time.Second || ttl > MaxClientSecretTTL {
		return "", time.Time{}, ErrClientSecretTTL
	}
	now := s.now().UTC().Truncate(time.Second)
	value = NewClientSecret()
	cs := &store.ClientSecret{ID: httpx.NewID("cs"), TeamID: p.TeamID, KeyID: p.KeyID, Hash: HashKey(value),
		Session: session, ExpireTime: now.Add(ttl), CreateTime: now}
	if err := s.st.ClientSecrets().Create(ctx, cs); err != nil {
		return "", time.Time{}, fmt.Errorf("issue client secret: %w", err)
	}
	// Expired secrets are of no use: sweep them now and then, on issue.
	if _, err := s.st.ClientSecrets().DeleteExpired(ctx, now.Add(-time.Hour)); err != nil {
		return "", time.Time{}, fmt.Errorf("issue client secret: %w", err)
	}
	return value, cs.ExpireTime, nil
}

// Check validates a presented secret: an unknown or malformed one and an
// expired one are 401 (*httpx.Error), and so is a secret whose creating
// key is gone, disabled or expired.
func (s *ClientSecrets) Check(ctx context.Context, value string) (*ClientSecret, error) {
	if KindOf(value) != TokenClientSecret {
		return nil, httpx.Unauthorized("invalid client secret")
	}
	cs, err := s.st.ClientSecrets().ByHash(ctx, HashKey(value))
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpx.Unauthorized("invalid client secret")
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !now.Before(cs.ExpireTime) {
		return nil, httpx.Unauthorized("this client secret has expired")
	}
	k, err := s.st.Keys().Get(ctx, cs.KeyID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpx.Unauthorized("the API key that created this client secret was deleted")
	}
	if err != nil {
		return nil, err
	}
	if k.Disabled || (!k.ExpireTime.IsZero() && !now.Before(k.ExpireTime)) {
		return nil, httpx.Unauthorized("the API key that created this client secret is disabled or expired")
	}
	if over, retry := s.tokens.Exceeded(k.ID, k.TPM, now); over {
		return nil, httpx.TooManyRequests(retry)
	}
	// The secret acts for its creator, with the creator's permissions as
	// they are now (a narrowed key narrows its secrets at once).
	acls, err := NewACLSet(k.ACLs)
	if err != nil {
		return nil, httpx.Forbidden("the API key that created this client secret has an invalid ACL")
	}
	if !acls.AllowsEndpoint(EndpointRealtime) || !acls.AnyModel() {
		return nil, httpx.Forbidden("the API key that created this client secret has no permission for endpoint realtime and a model (needs api-key:endpoint:realtime and api-key:model:<name>)")
	}
	return &ClientSecret{ID: cs.ID, TeamID: cs.TeamID, KeyID: cs.KeyID, Session: cs.Session, ExpiresAt: cs.ExpireTime, AllowsModel: acls.AllowsModel}, nil
}
