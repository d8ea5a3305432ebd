// Package numbers owns phone-number records: the numbers that route inbound
// SIP calls to an agent or to a webhook. It serves POST, GET, PATCH and
// DELETE /v2/phone-numbers[/{id}], checks every rule of a number (origin,
// E.164 through a phone-number library, exclusive routes, digest
// credentials, source CIDRs, webhook URLs), allocates svc_provisioned
// numbers from the operator's DID pool, and keeps the SIP digest password
// and the webhook secrets sealed at rest.
//
// The SIP layer finds a called number with Service.Resolve and the webhook
// layer reads a number's signing secret with Service.Webhook; both get the
// decrypted secrets, which read endpoints never return.
//
// Choices the spec leaves open:
//   - A bare IP address in sip_auth.allowed_addresses is taken as a /32 (or
//     /128) prefix, and every prefix is stored masked (10.1.2.3/8 →
//     10.0.0.0/8); at most MaxAllowedAddresses entries.
//   - auth_password is 8 to 128 characters; auth_username is 1 to 128
//     characters of the RFC 3261 user production (no spaces, no ':' or '@').
//   - area_code is a 3-digit NANP area code (first digit 2-9); a pool DID
//     matches it when it is +1 followed by those digits.
//   - When no pool DID is free the create fails with 409 and the code
//     "pool_exhausted" (param area_code when one was given).
//   - agent_id together with webhook is a 400 with param "webhook".
//   - POST answers 200 with {"phone_number": …, "webhook": {webhook_id,
//     dispatch_signing_secret}}; PATCH answers the same shape, with
//     "webhook" only when the patch created a webhook; GET answers the
//     bare record; DELETE answers {}.
package numbers
