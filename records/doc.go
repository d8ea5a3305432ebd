// Package records keeps and serves call records: every call the appliance
// handled, with its number, parties, route, timestamps (invite, answer,
// end), who ended it and why, the transcripts of both sides as the
// provider reported them, tool calls and their results, the other events
// of the call (DTMF, transfers, webhook attempts), and the RTP statistics.
//
// A Recorder persists each finished call: wire Recorder.OnEnd to
// call.Options.OnEnd. The write runs on the call's goroutine, bounded by a
// short timeout; a failure is logged with the call's call_id.
//
// A Service is the API module (ACL endpoint "calls"):
//
//	GET /v1/calls            the caller's team's calls, newest first
//	GET /v1/calls/{call_id}  one call: live view or stored record; 404 otherwise
//
// The listing takes page_size (1-1000, default 100), page_token,
// phone_number_id, phone_number (E.164), state (ringing, active, ended),
// from, to (SIP user parts, exact), since and until (RFC 3339, on the
// invite time: since <= invited_at < until); a bad value is a 400 naming
// the parameter. It answers {"calls":[…],"next_page_token":"…"}. The first
// page (no page_token) starts with every matching live call, newest
// first, above page_size stored records; later pages hold stored records
// only. A call's team is the team of its phone number.
//
// Timestamps are RFC 3339 in UTC with milliseconds, null when not reached
// (answered_at of a call never answered, ended_at of a live call);
// duration_ms runs from answer to end (to now while live).
package records
