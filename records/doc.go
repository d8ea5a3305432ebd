// Package records keeps and serves call records: every call the appliance
// handled, with its number, parties, route, timestamps (invite, answer,
// end), who ended it and why, the transcripts of both sides as the
// provider reported them, tool calls and their results, the other events
// of the call (DTMF, transfers, webhook attempts), and the RTP statistics.
//
// A Recorder keeps each call's record in the store from its admission:
// it is the call manager's call.Journal. The record is written when the
// call is admitted (before it rings), when it is answered, when a transfer
// is noted and when it ends. One writer stores the changes in batches (one
// transaction for the calls changed meanwhile, at most one per
// records.batch_interval); admission and end wait for their commit, bounded
// by a short timeout; a failure is logged with the call's call_id and
// written again by Recorder.Run, which also marks the open records alive
// at a low rate (records.alive_interval).
// After a crash, CloseCrashed (run on start) closes the records left open
// as ended_by "crash" at the last time each call was known to be up.
//
// A Service is the API module (ACL endpoint "calls"):
//
//	GET /v1/calls            the caller's team's calls, newest first
//	GET /v1/calls/{call_id}  one call: live view or stored record; 404 otherwise
//
// The listing takes page_size (1-100, default 20), page_token,
// phone_number_id, phone_number (E.164), state (ringing, active, ended),
// from, to (SIP user parts, exact), since and until (RFC 3339, on the
// invite time: since <= invited_at < until); a bad value is a 400 naming
// the parameter. It answers {"calls":[…],"next_page_token":"…"}. Every
// call is stored from its admission, so the pages are pages of stored
// records, a live call among them shown with its current view; only a live
// call whose record could not be stored is added above the first page. A
// call shows once. A call's team is the team of its phone number.
//
// Timestamps are RFC 3339 in UTC with milliseconds, null when not reached
// (answered_at of a call never answered, ended_at of a live call);
// duration_ms runs from answer to end (to now while live).
package records
