package numbers

import (
	"switchboard/webhook"

	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/rs/zerolog"
)

// Sealer encrypts secrets at rest (the SIP digest password, the webhook
// signing secret and auth_token). aad binds a sealed value to its place,
// e.g. "phone_number:pn_…:auth_password", so a sealed value moved to
// another record does not open.
type Sealer interface {
	Seal(plaintext []byte, aad string) (string, error)
	Open(sealed, aad string) ([]byte, error)
}

// Options configure a Service.
type Options struct {
	// SIPHost is the public SIP host carriers and PBXs send calls to,
	// returned as sip_host of every number.
	SIPHost string
	// Pool lists the E.164 DIDs svc_provisioned numbers are allocated
	// from, in order of preference. Entries that are not valid E.164 are
	// ignored (and logged); check them with NormalizeE164 in config
	// validation.
	Pool []string
	// Sealer encrypts secrets at rest. Without one, requests that carry
	// a secret (a password, a webhook) fail with a 500.
	Sealer Sealer
	// NewWebhookSecret makes a dispatch signing secret; default
	// DefaultWebhookSecret.
	NewWebhookSecret func() string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Log receives warnings about the configuration; default: discard.
	Log zerolog.Logger
	// Addresses says which addresses webhook URLs may name (the zero
	// value: no link-local or cloud metadata address).
	Addresses webhook.AddressPolicy
	// RegistrationChanges, when set, gets a value (without blocking: it
	// should have room for one) after each write of a number, so that the
	// registration manager of this node looks at the registrations at
	// once rather than at its next sync.
	RegistrationChanges chan<- struct{}
}

// DefaultWebhookSecret returns a Standard Webhooks secret: "whsec_" and
// the standard base64 of 32 random bytes.
func DefaultWebhookSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}
