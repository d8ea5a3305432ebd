// Package app wires the appliance together from its configuration: the
// store, the secret box, the key service, the HTTP API and (as they land)
// the SIP endpoint and the call runtime. cmd/switchboard's serve command and
// the end-to-end tests both start the daemon through it.
package app
