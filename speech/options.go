package speech

import "time"

// Options configures the speech service. The zero value is the embedded
// default: espeak-ng for TTS, pocketsphinx for STT.
type Options struct {
	// TTSEngine is "espeak" (default, local) or "upstream".
	TTSEngine string
	// STTEngine is "pocketsphinx" (default, local), "upstream" or "none"
	// (/v1/stt answers 503 after validating).
	STTEngine string
	// FallbackPriority is how the local STT engine's background decodes
	// (the agents' transcript fallback) are scheduled: PriorityIdle
	// (default), PriorityNice or PriorityNormal.
	FallbackPriority string
	// UpstreamURL is the provider's base URL (https://host); its WebSocket
	// endpoints use the same host with the ws/wss scheme.
	UpstreamURL string
	// UpstreamKeyEnv names the environment variable holding the provider's
	// API key (default SWITCHBOARD_UPSTREAM_API_KEY).
	UpstreamKeyEnv string
	// EspeakPath is the espeak-ng binary (default "espeak-ng" in PATH).
	EspeakPath string
	// PocketsphinxPath is the pocketsphinx_continuous binary (default in
	// PATH).
	PocketsphinxPath string
	// LamePath is the LAME binary used for mp3 output (default "lame").
	LamePath string
	// TempDir is where uploads are spooled (default os.TempDir()).
	TempDir string
	// MaxTextChars bounds the TTS text (default 15,000, the spec's limit).
	MaxTextChars int
	// MaxUploadBytes bounds an STT upload (default 500 MB, the spec's limit).
	MaxUploadBytes int64
	// UpstreamTimeout bounds one upstream REST call (default 10 minutes,
	// long enough to transcribe a large file).
	UpstreamTimeout time.Duration
	// StreamIdleTimeout closes a streaming connection that has sent
	// nothing for this long (default 60 s).
	StreamIdleTimeout time.Duration
}

// Engine names.
const (
	EngineEspeak   = "espeak"
	EngineUpstream = "upstream"
	EngineNone     = "none"
)

func (o Options) withDefaults() Options {
	if o.TTSEngine == "" {
		o.TTSEngine = EngineEspeak
	}
	if o.STTEngine == "" {
		o.STTEngine = EnginePocketsphinx
	}
	if o.FallbackPriority == "" {
		o.FallbackPriority = PriorityIdle
	}
	if o.UpstreamKeyEnv == "" {
		o.UpstreamKeyEnv = "SWITCHBOARD_UPSTREAM_API_KEY"
	}
	if o.MaxTextChars == 0 {
		o.MaxTextChars = 15000
	}
	if o.MaxUploadBytes == 0 {
		o.MaxUploadBytes = 500 * 1000 * 1000
	}
	if o.UpstreamTimeout == 0 {
		o.UpstreamTimeout = 10 * time.Minute
	}
	if o.StreamIdleTimeout == 0 {
		o.StreamIdleTimeout = 60 * time.Second
	}
	return o
}
