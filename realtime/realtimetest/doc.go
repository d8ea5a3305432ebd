// Package realtimetest is a scripted realtime upstream for tests: an
// httptest server on 127.0.0.1 speaking the spec's events over a real
// WebSocket. It checks the bearer key, records what clients send, answers
// session.update, and lets a test script what the model does: long paced
// responses, function calls, errors, refused or slow handshakes, stalls and
// abrupt disconnects.
package realtimetest
