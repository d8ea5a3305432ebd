// Package realtime owns the realtime voice-session protocol: typed client and
// server events with the names and shapes of the spec's Events section (the
// same as the OpenAI Realtime GA API), a session configuration type that keeps
// unknown fields, the Session and Engine interfaces the call object uses, an
// upstream client over gorilla/websocket, and an http.Handler that serves any
// Engine over WebSocket.
//
// Unknown events are never dropped: Decode returns them as *Unknown, and Encode
// writes them back byte for byte. The audio path is kept cheap:
// input_audio_buffer.append and response.output_audio.delta are encoded and
// decoded by hand, without reflection.
//
// Subpackages: echo is the offline in-process engine (energy VAD, echoes the
// caller's utterance, speaks text with espeak-ng); realtimetest is a scripted
// upstream server for tests.
package realtime
