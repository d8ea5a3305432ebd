// Package control serves the customer's side of live calls and realtime
// sessions over HTTP and WebSocket: the control socket
// GET /v1/realtime?call_id=… (a controller steering a webhook-routed
// call), direct realtime sessions GET /v1/realtime (API key or ephemeral
// client secret, proxied to the configured engine),
// POST /v1/realtime/client_secrets, and call control
// POST /v1/realtime/calls/{call_id}/refer|hangup|dtmf. It owns no call
// state: the calls and their webhooks live in package conversation, read
// through the Calls interface.
//
// # Authentication of /v1/realtime
//
// With call_id: an API key only, as a bearer token, holding the realtime
// endpoint ACL; a client secret is refused with 403 before the upgrade,
// and the call must belong to the key's team (404 otherwise). Without
// call_id: an API key (bearer; the model= parameter is checked against the
// key's model ACL) or a client secret, as a bearer token or as the
// subprotocol svc-client-secret.<secret> (the upgrade answers with another
// offered subprotocol, such as "realtime", or with the secret's own
// protocol when it was the only offer). The session stored with the secret
// is applied when the session opens, so session.created reports it.
//
// # Models
//
// A policy (policy.go) holds what a session may use: the models its key
// grants (for a client secret, its creator's key as it is now) and the
// model a secret's stored session names. ?model=, reasoning.effort and
// every session.update are checked against it before they reach the
// engine: unknown models are 400 model_not_found, models not granted 403.
package control
