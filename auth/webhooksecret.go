package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

const (
	// WebhookSecretPrefix starts a Standard Webhooks signing secret.
	WebhookSecretPrefix = "whsec_"
	// webhookSecretBytes is the key size of generated secrets.
	webhookSecretBytes = 32
	// Bounds for secrets supplied by users (Standard Webhooks recommends
	// 24 to 64 bytes).
	minWebhookSecretBytes = 24
	maxWebhookSecretBytes = 64
)

var errWebhookSecret = errors.New("webhook secret must be \"whsec_\" followed by standard base64 of 24 to 64 bytes")

// NewWebhookSecret returns a new Standard Webhooks signing secret:
// [WebhookSecretPrefix] followed by standard base64 of 32 random bytes.
func NewWebhookSecret() string {
	key := make([]byte, webhookSecretBytes)
	_, _ = rand.Read(key) // never fails (Go 1.24+)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// ValidateWebhookSecret checks a user-supplied signing secret: the
// [WebhookSecretPrefix], standard (padded) base64, and a key of 24 to 64 bytes.
func ValidateWebhookSecret(secret string) error {
	body, ok := strings.CutPrefix(secret, WebhookSecretPrefix)
	if !ok {
		return fmt.Errorf("%w: missing prefix", errWebhookSecret)
	}
	key, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return fmt.Errorf("%w: %w", errWebhookSecret, err)
	}
	if len(key) < minWebhookSecretBytes || len(key) > maxWebhookSecretBytes {
		return fmt.Errorf("%w: got %d bytes", errWebhookSecret, len(key))
	}
	return nil
}
