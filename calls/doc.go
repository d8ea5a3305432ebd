// Package calls keeps and serves call records: every call the appliance
// handled, with its number, parties, route, timestamps (invite, answer,
// end), who ended it and why, the transcripts of both sides as the
// provider reported them, tool calls and their results, the other events
// of the call, and the RTP statistics.
//
// A Recorder persists each finished call (wire Recorder.OnEnd to
// call.Options.OnEnd). A Service is the API module: GET /v1/calls lists
// the caller's team's calls newest first, live ones (from the call
// manager) above stored ones, and GET /v1/calls/{call_id} reads one.
package calls
