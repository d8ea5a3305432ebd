package auth

import (
	"crypto/rand"
	"strings"
)

const (
	base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// tokenBodyLen is the random part of API keys and client secrets:
	// 48 base62 characters carry 48·log2(62) ≈ 285 bits.
	tokenBodyLen = 48
)

// TokenKind tells what a bearer token is, judged by its prefix and shape.
type TokenKind int

const (
	// TokenUnknown is anything that is not a well-formed token of ours.
	TokenUnknown TokenKind = iota
	// TokenAPIKey is an API key secret ([APIKeyPrefix]).
	TokenAPIKey
	// TokenClientSecret is an ephemeral realtime client secret ([ClientSecretPrefix]).
	TokenClientSecret
)

// String returns the kind's lower-case name, suitable as a log or metric label.
func (k TokenKind) String() string {
	switch k {
	case TokenAPIKey:
		return "api_key"
	case TokenClientSecret:
		return "client_secret"
	default:
		return "unknown"
	}
}

// KindOf classifies a bearer token. Only a token with a known prefix followed
// by exactly the expected number of base62 characters is recognised, so
// malformed input can be refused before any store lookup.
func KindOf(token string) TokenKind {
	// ClientSecretPrefix ("sbcs-") does not start with APIKeyPrefix ("sb-"),
	// so the order of these checks does not matter.
	if body, ok := strings.CutPrefix(token, APIKeyPrefix); ok && isTokenBody(body) {
		return TokenAPIKey
	}
	if body, ok := strings.CutPrefix(token, ClientSecretPrefix); ok && isTokenBody(body) {
		return TokenClientSecret
	}
	return TokenUnknown
}

func isTokenBody(s string) bool {
	if len(s) != tokenBodyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isBase62(s[i]) {
			return false
		}
	}
	return true
}

func isBase62(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// randomBase62 returns n uniformly distributed base62 characters from
// crypto/rand, using rejection sampling to avoid modulo bias.
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		// crypto/rand.Read never returns an error (Go 1.24+); it crashes the
		// program instead if the system source fails.
		_, _ = rand.Read(buf)
		for _, b := range buf {
			if b >= 248 { // 248 = 4·62; keep only the unbiased range.
				continue
			}
			out = append(out, base62Alphabet[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out)
}
