// Package sip is Switchboard's signalling endpoint. It owns the sipgo user
// agent (UDP, TCP and TLS listeners), inbound dialogs (INVITE, ACK, BYE,
// CANCEL, re-INVITE, UPDATE, INFO, REFER/NOTIFY, OPTIONS), admission control
// (called-number match, CIDR allowlists, digest authentication with MD5 and
// SHA-256, brute-force rate limiting, max_calls, draining), SDP offer/answer
// for G.711 with telephone-event, the calls the server places (Place), and
// the Softphone used by `switchboard dial` and by tests. Every INVITE we
// send goes through one user-agent client (uac.go).
//
// It never opens RTP sockets: the media address to advertise is handed to
// Call.Answer, and the negotiated remote media is reported as
// MediaParams. Only this package imports sipgo; the rest of the application
// sees Call, Softphone and SoftphoneCall.
//
// # Hostile input
//
// Every byte meets the gate (gate.go) before sipgo's transaction layer: a
// blocked source is dropped unread; each UDP datagram is parsed and checked
// (checkRequest in validate.go: version 505, URI scheme 416, mandatory and
// single-valued headers, CSeq, Require 420) and a refusal is answered once,
// statelessly; stream transports are checked in the handler guard and capped
// per source (stream.go). Failing requests count against their source
// (flood.go) until it is blocked for a while. Session timers (RFC 4028) end
// calls whose peer vanished (timer.go). The RFC 4475 torture messages in
// testdata/rfc4475 are replayed by torture_test.go; FuzzServerMessage fuzzes
// whole messages through a running server.
//
// # Called-number normalisation
//
// The called number is taken from the Request-URI user part, or from the To
// URI when the Request-URI has none, and normalised to E.164 by
// NormalizeNumber:
//
//  1. URI parameters (";npdi", ";rn=...") and visual separators
//     (space, '-', '.', '(', ')', '/') are removed.
//  2. "+" followed by 1 to 15 digits is kept as it is.
//  3. A leading "00" (international call prefix) becomes "+".
//  4. Otherwise the configured trunk prefix (Options.TrunkPrefix, e.g. "0"
//     or "1") is stripped once when present, and the remaining national
//     number is read with libphonenumber rules for Options.DefaultCountry
//     (default "US") and formatted as E.164.
//  5. Anything else (letters, empty, more than 15 digits) is not a number
//     and the INVITE is answered 404.
package sip
