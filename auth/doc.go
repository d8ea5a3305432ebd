// Package auth owns the appliance's credential logic: secrets at rest
// (AES-256-GCM under a master key), API key secrets (generation, hashing,
// redaction), ACL strings and their evaluation, per-key rate limits,
// Standard Webhooks signing secrets and ephemeral realtime client secrets.
//
// The package is pure logic: it does no HTTP and touches no database. The
// store persists what it produces (key hashes, sealed secrets, ACL strings)
// and the HTTP layer calls it to authenticate and authorise requests. The
// only I/O is the master key file read or created once at start-up by
// [LoadOrCreateMasterKey].
//
// Token kinds are recognisable by prefix: API keys start with
// [APIKeyPrefix] ("sb-"), realtime client secrets with [ClientSecretPrefix]
// ("sbcs-") and webhook signing secrets with [WebhookSecretPrefix] ("whsec_").
package auth
