// Package amd is answering-machine detection: pure per-frame logic that
// listens to the first seconds of an outbound call's callee and says
// whether a person or a machine answered, and, for a machine, when its
// greeting is over (the beep, or the silence after the greeting) so that a
// message can be left.
//
// It measures what the classic detectors measure, from the audio alone:
// the silence before the first word, the length of the greeting (a person
// says "Hello?" and waits; a machine speaks on for seconds), and the beep,
// a pure tone found by a bank of Goertzel filters (one frequency holds
// nearly all of a block's energy, and stays put for a tenth of a second
// or more). No sockets, no clock: time is the audio's, 20 ms a block, so
// a test feeds it a file and gets the same answer every time.
package amd
