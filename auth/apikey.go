package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// APIKeyPrefix starts every API key secret, so leaked keys are recognisable
// by secret scanners and by [KindOf].
const APIKeyPrefix = "sb-"

// Redact shows redactHead leading and redactTail trailing characters of a
// token's body: 7 in total.
const (
	redactHead = 3
	redactTail = 4
	// redactMinBody is the shortest body that is partially shown; shorter
	// input is redacted completely.
	redactMinBody = 24
)

// NewKeySecret returns a new API key secret: [APIKeyPrefix] followed by 48
// base62 characters from crypto/rand (about 285 bits of entropy). The secret
// is shown to the caller once and only its [HashKey] is stored.
func NewKeySecret() string {
	return APIKeyPrefix + randomBase62(tokenBodyLen)
}

// HashKey returns the lower-case hex SHA-256 of a token, the form in which API
// keys (and client secrets) are stored and looked up.
//
// A fast unsalted hash is the right tool here, unlike for passwords: the
// secrets carry ≥ 256 bits from crypto/rand, so there is no dictionary to
// attack and brute force is infeasible whatever the hash speed. A slow salted
// KDF (bcrypt, argon2) would add tens of milliseconds of CPU to every
// authenticated request and, being salted, could not serve as an index to
// find the key's row from the presented token.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// VerifyKey reports whether secret hashes to storedHash, comparing in
// constant time.
func VerifyKey(secret, storedHash string) bool {
	return ConstantTimeEqual(HashKey(secret), storedHash)
}

// ConstantTimeEqual reports whether a and b are equal without leaking, through
// timing, where they first differ. (Their lengths may still leak; compare
// fixed-length values such as hashes.)
func ConstantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// Redact returns a display form of a token that identifies it to its owner
// without being usable: the known prefix, the first 3 and the last 4
// characters of the body, e.g. "sb-Ab1…xyz9". At most 7 characters of the
// body are shown, leaving over 240 bits of a key secret hidden. Input with an
// unknown prefix or a body shorter than 24 characters shows only the prefix
// and "…".
func Redact(secret string) string {
	prefix := ""
	for _, p := range []string{ClientSecretPrefix, APIKeyPrefix} {
		if strings.HasPrefix(secret, p) {
			prefix = p
			break
		}
	}
	body := secret[len(prefix):]
	if len(body) < redactMinBody || !isPrintableASCII(body) {
		return prefix + "…"
	}
	return prefix + body[:redactHead] + "…" + body[len(body)-redactTail:]
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
