package auth

// ClientSecretPrefix starts every ephemeral realtime client secret; it is
// distinct from [APIKeyPrefix] so [KindOf] can tell the two apart.
const ClientSecretPrefix = "sbcs-"

// NewClientSecret returns a new ephemeral realtime client secret:
// [ClientSecretPrefix] followed by 48 base62 characters from crypto/rand.
// Store it as [HashKey] like an API key; its lifetime is the caller's to
// enforce.
func NewClientSecret() string {
	return ClientSecretPrefix + randomBase62(tokenBodyLen)
}
