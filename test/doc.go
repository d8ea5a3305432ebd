// Package test holds the end-to-end tests: the built switchboard binary and
// in-process daemons driven over real sockets, with real SIP peers (sipp,
// baresip) where a call is involved.
//
// Most of these tests spend their time waiting on real-time audio (a call
// lasts as long as its peer's WAV) rather than on the CPU, so those that
// may run beside others call t.Parallel, and the package runs up to
// sideBySide of them at once unless -parallel says otherwise (go test's
// default, GOMAXPROCS, would be 2 here). A test may run beside others when
// it has ports of its own (takePorts, freePort), sets no environment
// (t.Setenv), counts no goroutines of the process (goleak), and asserts
// nothing that CPU contention could spoil: the tests that measure audio
// fidelity (echo windows, recordings), late frames, latencies in the
// sub-second range, transcripts of the local STT, or that drive chromium
// stay sequential, and Go runs them alone, before the parallel ones.
package test
