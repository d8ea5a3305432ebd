package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"switchboard/api/httpx"
	"switchboard/store"
)

// OwnerKeyID is the id of the key created on first start.
const OwnerKeyID = "key_owner"

// OwnerKeyFile is the file in the data directory that holds a generated
// owner key (mode 0600).
const OwnerKeyFile = "owner.key"

// KeyService authenticates requests with API keys and serves the key
// management and audit endpoints.
type KeyService struct {
	st      store.Store
	limiter *Limiter
	tokens  *TokenMeter
	now     func() time.Time
	// DefaultGrace is the old secret's validity after a rotation that does
	// not say oldSecretExpireTime.
	grace time.Duration
	// node is this appliance's address, reported by the propagation check.
	node string
	// fleet, when set, is asked for the propagation of a key.
	fleet Fleet
	// defQPS and defQPM apply to a key that sets no qps (qpm) of its own.
	defQPS, defQPM int
	// cache keeps recent key lookups for keyCacheTTL.
	cache keyCache
}

// KeyOption configures a KeyService.
type KeyOption func(*KeyService)

// WithClock injects the clock (tests).
func WithClock(now func() time.Time) KeyOption { return func(s *KeyService) { s.now = now } }

// WithRotationGrace sets the default validity of an old secret after rotation.
func WithRotationGrace(d time.Duration) KeyOption { return func(s *KeyService) { s.grace = d } }

// WithNodeAddress names this node in propagation answers.
func WithNodeAddress(addr string) KeyOption { return func(s *KeyService) { s.node = addr } }

// WithDefaultLimits sets the rates of every key that sets none of its own:
// qps requests per second and qpm per minute (0: unlimited). The owner key
// is such a key, so no key can flood the appliance unless told to.
func WithDefaultLimits(qps, qpm int) KeyOption {
	return func(s *KeyService) { s.defQPS, s.defQPM = qps, qpm }
}

// NewKeyService returns a key service over st.
func NewKeyService(st store.Store, opts ...KeyOption) *KeyService {
	s := &KeyService{st: st, limiter: NewLimiter(), tokens: NewTokenMeter(), now: time.Now, grace: DefaultRotationGrace, node: "127.0.0.1:8080"}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Tokens is the meter of the keys' model tokens (their tpm limits): the
// realtime sessions add what responses report, Authorize refuses a key
// over its limit.
func (s *KeyService) Tokens() *TokenMeter { return s.tokens }

// Bootstrap makes sure an owner key exists: a management key with wildcard
// ACLs. With adminKey set, that value is the owner key (re-keyed on every
// start if it changed); otherwise a key is generated on first start and
// written to <dataDir>/owner.key with mode 0600. It returns the path of the
// key file when it wrote one.
func (s *KeyService) Bootstrap(ctx context.Context, dataDir, teamID, adminKey string) (keyFile string, err error) {
	now := s.now().UTC()
	if adminKey != "" {
		if len(adminKey) < 16 {
			return "", errors.New("SWITCHBOARD_ADMIN_KEY must be at least 16 characters")
		}
		k, err := s.st.Keys().Get(ctx, OwnerKeyID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			err := s.createOwner(ctx, teamID, adminKey, now)
			if errors.Is(err, store.ErrConflict) {
				// Another node of the fleet created it at the same time.
				return s.Bootstrap(ctx, dataDir, teamID, adminKey)
			}
			return "", err
		case err != nil:
			return "", err
		case !VerifyKey(adminKey, k.Hash):
			k.Hash, k.Redacted, k.ModifyTime, k.ModifiedBy = HashKey(adminKey), Redact(adminKey), now, "system"
			defer s.cache.clear()
			return "", s.st.Keys().Update(ctx, k)
		}
		return "", nil
	}
	n, err := s.st.Keys().Count(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	secret := NewKeySecret()
	path := filepath.Join(dataDir, OwnerKeyFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("write owner key: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("write owner key: %w", err)
	}
	_, werr := f.WriteString(secret + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return "", fmt.Errorf("write owner key: %w", err)
	}
	if err := s.createOwner(ctx, teamID, secret, now); err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

func (s *KeyService) createOwner(ctx context.Context, teamID, secret string, now time.Time) error {
	return s.st.Tx(ctx, func(tx store.Store) error {
		k := &store.APIKey{
			ID: OwnerKeyID, TeamID: teamID, UserID: "owner", Name: "owner", Hash: HashKey(secret), Redacted: Redact(secret),
			ACLs: []string{"api-key:endpoint:*", "api-key:model:*"}, Management: true, ModifiedBy: "system",
			CreateTime: now, ModifyTime: now,
		}
		if err := tx.Keys().Create(ctx, k); err != nil {
			return err
		}
		return tx.Audit().Append(ctx, &store.AuditEvent{ID: httpx.NewID("ev"), TeamID: teamID, UserID: "system",
			Action: "api_key.bootstrap", Resource: "api_key/" + OwnerKeyID, Description: "owner key created on first start", Time: now})
	})
}

// Authorize implements api.Authorizer: it finds the key by the hash of the
// bearer token (current or, until its grace ends, rotated-out secret),
// refuses disabled and expired keys (401), checks management rights or the
// endpoint ACL (403), then the key's qps/qpm limits (429).
func (s *KeyService) Authorize(ctx context.Context, token string, rt httpx.Route) (*httpx.Principal, error) {
	if token == "" {
		return nil, httpx.Unauthorized("missing API key: send Authorization: Bearer <key>")
	}
	if KindOf(token) == TokenClientSecret {
		return nil, httpx.Unauthorized("a client secret cannot call this endpoint; use an API key")
	}
	hash := HashKey(token)
	now := s.now()
	k, ok := s.cache.get(hash, now)
	if !ok {
		var err error
		k, err = s.st.Keys().ByHash(ctx, hash)
		if errors.Is(err, store.ErrNotFound) {
			return nil, httpx.Unauthorized("invalid API key")
		}
		if err != nil {
			return nil, err
		}
		s.cache.put(hash, k, now)
	}
	switch {
	case k.OldHash == hash && !now.Before(k.OldExpire):
		return nil, httpx.Unauthorized("this API key was rotated and its old secret has expired")
	case k.Disabled:
		return nil, httpx.Unauthorized("this API key is disabled")
	case !k.ExpireTime.IsZero() && !now.Before(k.ExpireTime):
		return nil, httpx.Unauthorized("this API key has expired")
	}
	acls, _ := NewACLSet(k.ACLs)
	switch rt.Access {
	case httpx.Management:
		if !k.Management {
			return nil, httpx.Forbidden("this endpoint needs a management key")
		}
	default:
		if len(k.ACLs) == 0 {
			return nil, httpx.Forbidden("this API key has no permissions (empty ACL)")
		}
		if rt.Endpoint != "" && !acls.AllowsEndpoint(rt.Endpoint) {
			return nil, httpx.Forbidden(fmt.Sprintf("this API key has no permission for endpoint %s (needs api-key:endpoint:%s or api-key:endpoint:*)", rt.Endpoint, rt.Endpoint))
		}
		// The spec: a key needs both an endpoint and a model permission.
		if rt.Endpoint != "" && !acls.AnyModel() {
			return nil, httpx.Forbidden("this API key has no model permission (a key needs api-key:model:<name> or api-key:model:* beside its endpoints)")
		}
	}
	qps, qpm := k.QPS, k.QPM
	if qps == 0 {
		qps = s.defQPS
	}
	if qpm == 0 {
		qpm = s.defQPM
	}
	if ok, retry := s.limiter.Allow(k.ID, qps, qpm, now); !ok {
		return nil, httpx.TooManyRequests(retry)
	}
	if over, retry := s.tokens.Exceeded(k.ID, k.TPM, now); over {
		return nil, httpx.TooManyRequests(retry)
	}
	return &httpx.Principal{KeyID: k.ID, KeyName: k.Name, TeamID: k.TeamID, UserID: k.UserID, Management: k.Management, AllowsModel: acls.AllowsModel}, nil
}
