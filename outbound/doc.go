// Package outbound places calls: POST /v1/calls. A request names the
// callee (an E.164 number, reached through the calling number's outbound
// trunk, or a SIP URI dialed directly), one of the team's numbers as the
// caller, and the conversation (an agent, or the number's webhook and its
// controller); it is checked field by field, held to the team's limits
// (calls at once, calls per second), and answered at once with the call's
// record while the call rings in the background.
//
// The limits hold across a fleet: a reservation locks the team's row in
// the shared store (store.OutboundStore), reads its rate state (the GCRA
// of auth.GCRA) and counts its slots, one per placed call in progress on
// any node; the call's end frees its slot, and the slots of a node found
// lost (or that stopped) stop counting at the next reservation.
//
// The call itself is a call like any other: the SIP server places it
// from its own socket (sip.Server.Place), the call manager runs it on a
// placed SIP leg (call.NewPlacedLeg) with the conversation the router
// picks, and the call records, webhooks and controller follow it.
package outbound
