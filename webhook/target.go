package webhook

import (
	"fmt"
	"net/url"
	"strings"
)

// Target is where and how one webhook is delivered. Values are plaintext:
// the caller decrypts the stored secrets before building a Target and must
// not log it (String redacts the secrets).
type Target struct {
	// ID is the webhook id. It appears in logs and is the OAuth client_id
	// when AuthToken holds only a client secret (see AuthURL).
	ID string
	// URL receives the POST; http or https.
	URL string
	// SigningSecret is the Standard Webhooks secret, "whsec_" followed by
	// base64 (the prefix is optional). Required.
	SigningSecret string
	// AuthToken is sent as "Authorization: Bearer <AuthToken>" when AuthURL
	// is empty. When AuthURL is set, it is the OAuth client credential
	// instead: "client_id:client_secret", or a bare client secret whose
	// client_id is ID. Optional.
	AuthToken string
	// AuthURL, when set, is an OAuth 2.0 token endpoint (RFC 6749 §4.4,
	// client credentials grant). The dispatcher obtains an access token
	// there with the AuthToken credential, caches it until shortly before
	// it expires, and sends it as the bearer credential. Optional; requires
	// AuthToken.
	AuthURL string
}

// String describes the target without its secrets.
func (t Target) String() string {
	return fmt.Sprintf("webhook{id=%s url=%s auth=%s}", t.ID, redactURL(t.URL), t.authKind())
}

func (t Target) authKind() string {
	switch {
	case t.AuthURL != "":
		return "oauth"
	case t.AuthToken != "":
		return "bearer"
	default:
		return "none"
	}
}

// clientCredentials splits AuthToken into an OAuth client id and secret.
func (t Target) clientCredentials() (id, secret string, err error) {
	if i := strings.IndexByte(t.AuthToken, ':'); i >= 0 {
		id, secret = t.AuthToken[:i], t.AuthToken[i+1:]
	} else {
		id, secret = t.ID, t.AuthToken
	}
	if id == "" || secret == "" {
		return "", "", fmt.Errorf("%w: auth_url needs auth_token \"client_id:client_secret\" (or a webhook id and a client secret)", ErrInvalidTarget)
	}
	return id, secret, nil
}

// checkHTTPURL parses raw and requires an absolute http(s) URL with a host.
func checkHTTPURL(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidTarget, field, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %s must be an absolute http or https URL", ErrInvalidTarget, field)
	}
	return u, nil
}

// redactURL keeps scheme, host and path of raw, dropping user info and
// query (either may carry a credential).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "invalid"
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return r.String()
}
