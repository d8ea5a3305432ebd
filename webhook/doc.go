// Package webhook owns outgoing webhook deliveries: the event envelope,
// Standard Webhooks v1 signing, retries inside a deadline, and the
// receiver's credential (a static bearer token or an OAuth 2.0 client
// credentials token). It knows nothing about SIP: the call owner builds the
// event (with the headers the call kept at admission) and decides the ring
// window.
//
// # Events
//
// Every delivery is one Event:
//
//	{"id":"evt_…","object":"event","type":"…","created_at":<unix s>,"data":{…}}
//
// realtime.call.incoming (the spec's) is sent while the caller hears
// ringing, with data {call_id, phone_number_id, from, to, sip_headers:
// [{name, value}, …]}; sip_headers carries the INVITE's headers the call
// kept at admission (sip.forward_headers: From, To, Call-ID, X-*,
// User-to-User, the identity headers, … by default). The lifecycle events are the appliance's own names, sent to webhooks
// that enable them:
//
//	realtime.call.ended     {call_id, phone_number_id, reason, ended_by, duration_ms}
//	realtime.call.transfer  {call_id, target_uri, status, sip_status}
//
// ended_by is caller, agent, controller or system; a transfer's status is
// accepted, completed or failed.
//
// # Signing and headers
//
// Each POST carries Content-Type: application/json, webhook-id (the event
// id, the same on every attempt), webhook-timestamp (Unix seconds, taken
// afresh for each attempt so receivers' 5-minute tolerance holds) and
// webhook-signature ("v1,<base64 HMAC-SHA256>" over id.timestamp.body),
// made by the standard-webhooks Go library with the number's
// dispatch_signing_secret. Idempotency-Key repeats the event id.
//
// # Credentials
//
// Target.AuthToken without AuthURL is sent as "Authorization: Bearer
// <auth_token>". With AuthURL, AuthToken is an OAuth client credential,
// "client_id:client_secret" (split at the first colon), or a bare client
// secret whose client_id is the webhook id. The dispatcher POSTs
// grant_type=client_credentials (form-encoded) to AuthURL with HTTP Basic
// client authentication (RFC 6749 §2.3.1, id and secret form-encoded),
// expects {access_token, token_type: Bearer, expires_in}, and sends the
// access token as the bearer credential. Tokens are cached per (auth_url,
// client id, secret) until expires_in minus 10 % (at most 30 s), or 5
// minutes when expires_in is absent; concurrent deliveries share one token
// request. A 401 from the receiver drops the token and retries once with a
// new one. A 4xx from the token endpoint (other than 408/409/425/429) ends
// the delivery.
//
// # Retries
//
// Deliver retries 5xx, 408, 409, 425, 429 and transport errors with
// exponential backoff (250 ms, ×2, at most 2 s, 20 % jitter) or the
// response's Retry-After, until a 2xx, another status, or the context's
// deadline: the caller sets it to the ring window. Redirects are not
// followed. Each attempt (start, status, latency, error) is kept in
// Result for the call record. Nothing secret is logged: only the URL host,
// event id, attempt number, status and latency.
//
// Lifecycle events go through DeliverAsync, a bounded queue served by a
// few workers; it drops (and logs) events when the queue is full rather
// than block the call. Close drains the queue for up to CloseTimeout.
//
// # Tools and call context
//
// ToolClient POSTs once, never retried (the caller is waiting), signed
// with the appliance's tool secret: custom tool calls (ToolRequest, with
// the call's variables) and the realtime.call.context event to a number's
// context_url, whose answer (ContextAnswer) is read up to 64 KiB.
package webhook
