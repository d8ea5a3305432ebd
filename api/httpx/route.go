package httpx

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// Access says who may call a route.
type Access int

const (
	// APIKey routes need an API key holding the route's endpoint ACL.
	APIKey Access = iota
	// Management routes need a management key (/auth, /audit).
	Management
	// Public routes need no key (health probes).
	Public
)

// Route is one method and path of the API, with the ACL endpoint name it
// belongs to. The router applies authentication, ACLs and rate limits from
// these fields before Handler runs.
type Route struct {
	Method   string
	Pattern  string // net/http pattern without the method, e.g. "/v2/phone-numbers/{id}"
	Endpoint string // ACL endpoint name, e.g. "phone-numbers"
	Access   Access
	Handler  func(w http.ResponseWriter, r *http.Request) error
}

// Principal is the authenticated caller of a request.
type Principal struct {
	KeyID string
	// KeyName is the key's name (for records that say who acted).
	KeyName    string
	TeamID     string
	UserID     string
	Management bool
	// AllowsModel reports whether the key's ACL grants a model.
	AllowsModel func(model string) bool
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller of the request, or nil on public routes.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// RequireModel enforces the api-key:model ACL for a request that names a
// model (403 when the key does not grant it).
func RequireModel(ctx context.Context, model string) error {
	p := PrincipalFrom(ctx)
	if p == nil || p.AllowsModel == nil || !p.AllowsModel(model) {
		return Forbidden("this API key has no permission for model " + model + " (needs api-key:model:" + model + " or api-key:model:*)")
	}
	return nil
}

// NewID returns a new identifier with a readable prefix, e.g. "pn_…".
func NewID(prefix string) string {
	return prefix + "_" + uuid.NewString()
}

// Audit appends an audit event for a change made by the request's caller.
// Call it inside the same store transaction as the change.
func Audit(ctx context.Context, st store.Store, action, resource, description string) error {
	p := PrincipalFrom(ctx)
	e := &store.AuditEvent{
		ID: uuid.NewString(), Action: action, Resource: resource, Description: description, Time: time.Now().UTC(),
		TeamID: "default", UserID: "system",
	}
	if p != nil {
		e.TeamID, e.UserID, e.KeyID = p.TeamID, p.UserID, p.KeyID
	}
	return st.Audit().Append(ctx, e)
}
