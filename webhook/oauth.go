package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token lifetime rules. A token is reused until expires_in minus a margin
// of 10 % of its lifetime, at most maxTokenMargin, so that it never expires
// in flight. A response without expires_in is cached for
// defaultTokenLifetime.
const (
	maxTokenMargin       = 30 * time.Second
	defaultTokenLifetime = 5 * time.Minute
	maxTokenCacheEntries = 1024
)

// tokenSource obtains OAuth 2.0 access tokens with the client credentials
// grant (RFC 6749 §4.4) and caches them per (token URL, client id, client
// secret). Concurrent requests for the same key share one token request.
type tokenSource struct {
	client *http.Client
	opts   *Options

	mu      sync.Mutex
	entries map[string]*tokenEntry
}

// tokenEntry is one cached token, or one token request in flight (ready
// not yet closed). Fields other than ready are written before ready is
// closed and read only after.
type tokenEntry struct {
	ready  chan struct{}
	token  string
	expiry time.Time
	err    error
}

func newTokenSource(client *http.Client, opts *Options) *tokenSource {
	return &tokenSource{client: client, opts: opts, entries: make(map[string]*tokenEntry)}
}

// tokenKey names a cache entry. The secret is hashed so that a rotated
// credential gets a new token and the map holds no plaintext secret.
func tokenKey(authURL, clientID, secret string) string {
	h := sha256.Sum256([]byte(secret))
	return authURL + "\x00" + clientID + "\x00" + hex.EncodeToString(h[:8])
}

// token returns a valid access token for the credential, from the cache or
// from the token endpoint.
func (s *tokenSource) token(ctx context.Context, authURL, clientID, secret string) (string, error) {
	key := tokenKey(authURL, clientID, secret)
	for {
		s.mu.Lock()
		e := s.entries[key]
		if e != nil {
			select {
			case <-e.ready:
				if e.err == nil && s.opts.Now().Before(e.expiry) {
					s.mu.Unlock()
					return e.token, nil
				}
				// Expired or failed: fetch anew below.
			default:
				s.mu.Unlock()
				select {
				case <-e.ready:
				case <-ctx.Done():
					return "", fmt.Errorf("oauth token: %w", context.Cause(ctx))
				}
				if e.err == nil {
					return e.token, nil
				}
				if isContextErr(e.err) && ctx.Err() == nil {
					continue // the fetching caller gave up, not the endpoint
				}
				return "", e.err
			}
		}
		e = &tokenEntry{ready: make(chan struct{})}
		s.entries[key] = e
		s.sweepLocked()
		s.mu.Unlock()

		e.token, e.expiry, e.err = s.fetch(ctx, authURL, clientID, secret)
		close(e.ready)
		return e.token, e.err
	}
}

// invalidate drops token from the cache if it is still the cached one
// (the receiver refused it).
func (s *tokenSource) invalidate(authURL, clientID, secret, token string) {
	key := tokenKey(authURL, clientID, secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		return
	}
	select {
	case <-e.ready:
		if e.token == token {
			delete(s.entries, key)
		}
	default:
	}
}

// sweepLocked bounds the cache by dropping settled entries that expired or
// failed once it grows past maxTokenCacheEntries.
func (s *tokenSource) sweepLocked() {
	if len(s.entries) <= maxTokenCacheEntries {
		return
	}
	now := s.opts.Now()
	for k, e := range s.entries {
		select {
		case <-e.ready:
			if e.err != nil || !now.Before(e.expiry) {
				delete(s.entries, k)
			}
		default:
		}
	}
}

// tokenResponse is the successful token response (RFC 6749 §5.1).
// expires_in is accepted as a number or a numeric string, since both are
// seen in the field.
type tokenResponse struct {
	AccessToken string          `json:"access_token"`
	TokenType   string          `json:"token_type"`
	ExpiresIn   json.RawMessage `json:"expires_in"`
}

// fetch asks the token endpoint for a token: POST, form-encoded
// grant_type=client_credentials, client authentication by HTTP Basic with
// the form-encoded id and secret (RFC 6749 §2.3.1).
func (s *tokenSource) fetch(ctx context.Context, authURL, clientID, secret string) (string, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.AttemptTimeout)
	defer cancel()
	start := s.opts.Now()
	form := url.Values{"grant_type": {"client_credentials"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, authURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("oauth token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", s.opts.UserAgent)
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	resp, err := s.client.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("oauth token: %w", scrubURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxResponseBytes))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("oauth token: read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		if retryable(resp.StatusCode) {
			return "", time.Time{}, fmt.Errorf("oauth token: status %d", resp.StatusCode)
		}
		return "", time.Time{}, &StatusError{Status: resp.StatusCode, TokenEndpoint: true}
	}
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		return "", time.Time{}, fmt.Errorf("oauth token: %w: %w", errTokenResponse, err)
	}
	if tr.AccessToken == "" {
		return "", time.Time{}, fmt.Errorf("oauth token: %w: no access_token", errTokenResponse)
	}
	if tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer") {
		return "", time.Time{}, fmt.Errorf("oauth token: %w: token_type %q is not bearer", errTokenResponse, tr.TokenType)
	}
	life := parseExpiresIn(tr.ExpiresIn)
	margin := min(life/10, maxTokenMargin)
	return tr.AccessToken, start.Add(life - margin), nil
}

// parseExpiresIn reads expires_in as seconds from a JSON number or string;
// absent, invalid or non-positive values give defaultTokenLifetime.
func parseExpiresIn(raw json.RawMessage) time.Duration {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || !(secs > 0 && secs <= 1e9) { // also rejects NaN
		return defaultTokenLifetime
	}
	return time.Duration(secs * float64(time.Second))
}

// isContextErr reports whether err came from a cancelled or expired
// context.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// scrubURLError removes the URL from a *url.Error (a URL may carry a
// credential in its query) and keeps the cause.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}
