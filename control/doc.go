// Package control owns the customer's side of webhook-routed calls and
// realtime sessions: the realtime.call.incoming webhook and the lifecycle
// webhooks of those calls, the control socket GET /v1/realtime?call_id=…
// (a controller steering a live phone call), direct realtime sessions
// GET /v1/realtime (API key or ephemeral client secret, proxied to the
// configured engine), POST /v1/realtime/client_secrets, and call control
// POST /v1/realtime/calls/{call_id}/refer|hangup|dtmf.
//
// # Webhook-routed calls
//
// When a call arrives on a number routed to a webhook, Conversation
// returns an agent.ControlledCall: while the caller hears ringing the
// appliance POSTs realtime.call.incoming (signed, retried inside the ring
// window; each attempt noted in the call record as kind "webhook"), and
// waits for a controller to open /v1/realtime?call_id=. The first one to
// attach answers the call once the model session is ready; nobody within
// the ring timeout: 480. A dropped controller leaves the call running
// with its last configuration for the grace time.
//
// Lifecycle webhooks are always on for webhook-routed numbers, signed
// the same way and sent to the same URL: realtime.call.transfer
// (accepted, completed, failed) and realtime.call.ended. Receivers that
// do not want them answer 2xx and ignore the type.
//
// # Authentication of /v1/realtime
//
// With call_id: an API key only, as a bearer token, holding the realtime
// endpoint ACL; a client secret is refused with 403 before the upgrade,
// and the call must belong to the key's team (404 otherwise). Without
// call_id: an API key (bearer; the model= parameter is checked against the
// key's model ACL) or a client secret, as a bearer token or as the
// subprotocol svc-client-secret.<secret> (the upgrade answers with another
// offered subprotocol, such as "realtime", never the secret). The
// session stored with the secret is applied when the session opens.
package control
