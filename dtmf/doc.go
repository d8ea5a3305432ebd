// Package dtmf owns the caller's key presses: decoding them from RFC 4733
// telephone-events, SIP INFO bodies and in-band tones, merging the three
// sources, buffering digits and deciding when to hand them to the model
// under the agent's policy, and encoding key presses to send (RFC 4733
// events, or tones for peers without telephone-event).
//
// The package is pure logic: bytes, packets and samples in, events out. It
// opens no sockets, starts no goroutines and reads no clock: every method
// that depends on time takes now, and the types that wait (Receiver, Buffer,
// Collector) expose Deadline so that the call owner arms its own timer and
// calls Tick. None of the types is safe for concurrent use; the call's
// goroutine owns them.
//
// # Pipeline
//
//	RTP telephone-event ─ Receiver ─┐
//	SIP INFO body ─── ParseINFO ────┼─ Collector (Merger → Policy routes → Buffer) ─▶ Result
//	decoded audio ──── Detector ────┘
//
// For each Result the call owner sends Result.Key.Notification() to the
// controller as input_audio_buffer.dtmf_event_received (every accepted key,
// whatever the policy), runs Result.Action (ModeRoute), and sends
// Policy.ModelText(Result.Flush) to the model as one user text message. It
// also calls Collector.SpeechStarted on the model's speech_started and
// Collector.Tick when Collector.Deadline passes.
//
// # Documented choices
//
// RFC 4733: an event is identified by its RTP timestamp, never by the marker
// bit. A key is reported when the first packet of a new timestamp arrives
// (lowest latency; the end packet is not needed), retransmitted and late
// packets are dropped, and an event without end packets is closed after
// ReceiverOptions.EndTimeout. See Receiver.
//
// SIP INFO: application/dtmf-relay (Signal=, Duration= in ms, keys
// case-insensitive) and application/dtmf (the key alone). Signal values 10
// and 11 mean * and #, 12-15 mean A-D, as RFC 4733 codes (Cisco and many
// gateways send them). See ParseINFO.
//
// In-band: a Goertzel detector on 8 kHz audio, 102-sample blocks, following
// ITU-T Q.24 (accept ±1.5%, reject ±3.5%, twist 8 dB normal / 4 dB reverse,
// 40 ms minimum tone and pause) with an energy-purity check against
// talk-off. A pure two-sine signal that dwells 25 ms at a row and a column
// frequency is a DTMF tone by definition and is detected. See Detector.
//
// Merging: a key reported by two sources within 250 ms is one press; each
// press absorbs at most one copy per other source, and presses from the
// same source are never merged, so a key pressed twice stays two presses.
// See Merger.
//
// Flush rule: digits are flushed on #, after 2.5 s without a key
// (BufferOptions.IdleTimeout), when the caller starts speaking, or at 64
// digits. The # is NOT part of Flush.Digits: it terminates the entry, and
// the model text says so ("The caller entered 1234 on the phone keypad and
// pressed # to finish."). A lone # is flushed too ("The caller pressed # on
// the phone keypad."), since "press # to confirm" is a common prompt. An
// empty buffer never flushes on idle or speech. Tools receive Flush.Digits.
//
// Policy: ModeModel (default) shows the digits to the model. ModeRedact
// tells the model only how many digits were entered; the digits still reach
// the controller (Notification) and tools (Flush.Digits), and the call owner
// must log them only through Policy.LogDigits and record only ModelText in
// the transcript and call record. ModeRoute acts on mapped keys at once
// (transfer, hangup) after flushing what was typed before; unmapped keys
// follow ModeModel.
//
// Sending: AppendEventPackets follows RFC 4733 section 2.5.1 (one timestamp
// per event, marker on the first packet, growing durations, the end packet
// sent three times, one interval apart); ToneGenerator writes the dual tone
// at -10 dBFS per tone for peers that did not negotiate telephone-event.
package dtmf
