// Package recording records calls: a stereo 16-bit WAV at 8 kHz, the
// caller on the left and what the caller heard of the agent on the right
// (a barged-in reply up to the cut), time-aligned on the media clock.
//
// A Recording is a media.Tap: the leg's media goroutine copies each frame,
// as the session already holds it (PCM, or G.711 bytes that the writer
// expands with G.711's table), into a bounded queue and never waits; a
// full queue drops the frame and counts it. One writer goroutine per call
// places the frames by their time and writes once a second (under the
// redact policy it holds the last 600 ms back, so a key's tone is
// silenced before it reaches the file):
//
//   - plain files (<dir>/<call_id>.wav) get the header's sizes rewritten
//     each second, so a crash or SIGKILL leaves a playable file up to the
//     last second;
//   - encrypted files (<dir>/<call_id>.wav.sealed, recording.encrypt) are
//     a 24-byte header and one AES-256-GCM chunk per second of audio, each
//     sealed once under a key derived from the master key, with a nonce of
//     the file's random prefix and the chunk index and the call id as
//     associated data. A reader decrypts only the chunks a Range needs
//     and serves the WAV header it computes from the file's size.
//
// Service owns the directory: it starts recordings (call.Recorder),
// opens them for GET /v1/calls/{id}/recording, deletes them, removes
// those past the retention, and POSTs realtime.call.recording_ready to a
// webhook number's webhook when a recording is finished.
package recording
