// Package registration keeps the appliance registered where numbers ask
// it to be (outbound registration): a number's registration object makes
// the appliance REGISTER an account at a PBX or a registration-only
// carrier, so that the calls for that account reach it.
//
// The Manager reads the registrations to keep from the numbers
// (numbers.Service.Bindings: numbers registering the same account with
// the same contact share one binding) at every sync and whenever a number
// changed on this node, and holds each binding through a lease in the
// store: one node of a fleet registers each binding, renews its lease at
// each sync, and another node takes the binding over once the lease has
// run out (the holder died). A held binding is a line: a goroutine that
// registers (package sip sends the REGISTERs), refreshes before the
// registrar's expiry, backs off after a failure (doubling from
// registration.retry_min to registration.retry_max, with a tenth of
// jitter), keeps the NAT path open between refreshes, and unregisters
// (Expires: 0) when its numbers drop it, when another node took it over,
// and when the appliance shuts down (its drain, before the SIP server
// stops).
//
// The state of each binding (registering, registered, failed, off; the
// registrar's expiry, its last status and error) is written to the store,
// where every node's GET /v2/phone-numbers/{id} reads it; a change of
// state (or of the failure's status) is logged once, counted in the
// switchboard_sip_registrations gauge, and sent as a signed
// phone_number.registration webhook to each of the binding's numbers that
// routes to a webhook. Retries that fail the same way are not logged.
package registration
