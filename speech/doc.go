// Package speech owns text to speech and speech to text: the engines behind
// small interfaces (a local espeak-ng synthesizer, the embedded default, and
// upstream engines that call a provider's /v1/tts and /v1/stt over REST and
// WebSocket), the speech-tag parser, the audio encoders (WAV, raw PCM, G.711
// mu-law and A-law, MP3 through LAME) and a resampler, and the HTTP and
// WebSocket endpoints POST/GET /v1/tts, GET /v1/tts/voices and POST/GET
// /v1/stt.
//
// The agent runtime uses Service.Synthesize and Service.RenderG711 to make
// PCM or 8 kHz G.711 greetings without going through HTTP.
package speech
