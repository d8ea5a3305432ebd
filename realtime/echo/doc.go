// Package echo is the offline realtime engine, the embedded default: an
// in-process session speaking the same events as a provider, so a call works
// with no network and no account.
//
// Server VAD is an energy gate with hangover over 10 ms frames (PCM16 24 kHz,
// or G.711 decoded for the measurement only). Each detected turn produces
// input_audio_buffer.speech_started, speech_stopped, committed and
// conversation.item.added, and (with create_response) a full response whose
// audio is the caller's own utterance, byte for byte when the input and
// output formats match, with a transcript saying how long the caller spoke.
// User text messages (a greeting, DTMF digits) are spoken with a Synthesizer
// in the session's voice (the appliance gives it its TTS engine; standalone:
// espeak-ng when installed, a short tone otherwise). With
// turn_detection.idle_timeout_ms a silent caller gets a check-in after each
// answer (idle.go).
//
// Response audio is sent in 100 ms deltas paced at real time after a 200 ms
// head start (Options.Chunk, Options.Lead, Options.Unpaced), like a provider
// that streams slightly ahead of playback.
package echo
