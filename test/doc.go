// Package test holds the end-to-end tests: the built switchboard binary and
// in-process daemons driven over real sockets, with real SIP peers (sipp,
// baresip) where a call is involved.
package test
