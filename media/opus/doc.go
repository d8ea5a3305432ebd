// Package opus is the appliance's Opus codec (RFC 6716): a small cgo
// wrapper over Debian's libopus (libopus-dev at build time, libopus0 at
// run time), the codec browsers prefer for WebRTC calls. It holds one
// encoder or decoder per call, mono, at the rate the call's audio path
// runs (8, 12, 16, 24 or 48 kHz); libopus resamples to and from its
// internal 48 kHz itself.
package opus
