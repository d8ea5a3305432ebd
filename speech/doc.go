// Package speech owns text to speech and speech to text: the engines behind
// small interfaces (Synthesizer, Transcriber), the speech-tag parser, the
// audio encoders and a resampler, and the endpoints POST /v1/tts, GET
// /v1/tts (WebSocket), GET /v1/tts/voices, POST /v1/stt and GET /v1/stt
// (WebSocket).
//
// Engines. TTS is "espeak" (the embedded default: the espeak-ng program,
// SSML input, 22050 Hz output resampled to the requested rate; a missing
// binary is a 503 naming the Debian package) or "upstream" (a provider's
// /v1/tts over REST and WebSocket, asked for raw PCM so that encoding is
// the same for both engines). STT is "pocketsphinx" (the default, local:
// the pocketsphinx_continuous program on each file or utterance; interim
// hypotheses on the WebSocket by decoding the utterance so far; what it
// cannot do, such as diarize, smart_turn, keyterm or format, is a 400
// naming the field), "upstream" (the upload is streamed from disk to the
// provider's /v1/stt; the WebSocket is bridged frame by frame) or "none"
// (503 after validation). Transcripts give times and duration with two
// decimals, and language empty, as the spec does.
//
// Speech tags become SSML for espeak-ng: inline tags are breaks (non-verbal
// sounds such as [laugh] are short pauses, since espeak-ng cannot make
// them), wrapping tags prosody (rate, pitch, volume, range) or emphasis.
// Unknown "[...]" is ordinary text; unknown "<name>" is a 400, as are
// unbalanced tags. For an upstream engine the text is sent as written.
//
// Timestamps. espeak-ng's command line reports no word timing, so a timed
// request renders each clause separately and measures where its speech
// starts and ends in the samples; letters share their clause's span in
// proportion, inline tags span exactly the silence put in their place, and
// wrapping tags are zero-length at their position. graph_chars has one
// entry per input character (tags spelled out character by character);
// graph_times entries are [start, end] arrays. With the upstream engine
// the provider's times are used.
//
// Languages: the spec's list, and any other language the engine speaks
// (the spec: "other languages may work with varying accuracy"): every
// language espeak-ng has a voice for (espeak-ng --voices, asked once), or
// any well-formed tag for an upstream engine, whose provider judges.
//
// Encoding: wav (44-byte header), pcm (s16le), mulaw and alaw (media.PCMU,
// media.PCMA), mp3 through the LAME program (Debian package lame) in CBR
// at the requested rate; a bit rate the rate cannot carry (above 160 kbps
// at 16-24 kHz, MPEG-2, or 64 kbps at 8 kHz, MPEG-2.5) is a 400, and the
// default of 128 kbps becomes 64 kbps at 8 kHz. text_normalization is
// forwarded to an upstream engine; espeak-ng always speaks numbers and
// symbols in spoken form.
//
// The agent runtime uses Service.Synthesize (PCM at a chosen rate) and
// Service.RenderG711 (8 kHz mu-law or A-law bytes for a greeting cache).
package speech
