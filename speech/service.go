package speech

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"switchboard/api/httpx"
)

// Service serves the speech endpoints and renders speech for the agent
// runtime.
type Service struct {
	opts Options
	log  zerolog.Logger
	tts  Synthesizer
	stt  Transcriber // nil when no STT engine is configured
	// sttReady: the STT engine can serve (the local one found its
	// program at start).
	sttReady bool
	enc      Encoder

	wg     sync.WaitGroup // streaming connections
	mu     sync.Mutex
	closed bool
	conns  map[closer]struct{}
}

type closer interface{ Close() error }

// NewService builds the service with the engines opts selects.
func NewService(opts Options, log zerolog.Logger) (*Service, error) {
	opts = opts.withDefaults()
	s := &Service{opts: opts, log: log, enc: Encoder{LamePath: opts.LamePath}, conns: map[closer]struct{}{}}
	key := os.Getenv(opts.UpstreamKeyEnv)
	client := &http.Client{Timeout: opts.UpstreamTimeout}
	switch strings.ToLower(opts.TTSEngine) {
	case EngineEspeak:
		e := NewEspeak(opts.EspeakPath)
		if err := e.Check(); err != nil {
			log.Warn().Err(err).Msg("local text to speech unavailable")
		}
		s.tts = e
	case EngineUpstream:
		u, err := NewUpstreamTTS(opts.UpstreamURL, key, client)
		if err != nil {
			return nil, fmt.Errorf("tts engine: %w", err)
		}
		s.tts = u
	default:
		return nil, fmt.Errorf("tts engine %q: want espeak or upstream", opts.TTSEngine)
	}
	switch strings.ToLower(opts.STTEngine) {
	case EngineNone:
	case EnginePocketsphinx:
		if err := checkPriority(opts.FallbackPriority); err != nil {
			return nil, err
		}
		p := NewPocketsphinx(opts.PocketsphinxPath, opts.TempDir, 0)
		p.background = opts.FallbackPriority
		if err := p.Check(); err != nil {
			log.Warn().Err(err).Msg("local speech to text unavailable")
		} else {
			s.sttReady = true
		}
		s.stt = p
	case EngineUpstream:
		u, err := NewUpstreamSTT(opts.UpstreamURL, key, client)
		if err != nil {
			return nil, fmt.Errorf("stt engine: %w", err)
		}
		s.stt, s.sttReady = u, true
	default:
		return nil, fmt.Errorf("stt engine %q: want pocketsphinx, upstream or none", opts.STTEngine)
	}
	return s, nil
}

// Routes lists the speech endpoints: POST and GET (WebSocket) /v1/tts, GET
// /v1/tts/voices and GET /v1/custom-voices (ACL endpoint "tts"), POST and
// GET (WebSocket) /v1/stt (ACL endpoint "stt").
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{Method: http.MethodPost, Pattern: "/v1/tts", Endpoint: "tts", Access: httpx.APIKey, Handler: s.handleTTS},
		{Method: http.MethodGet, Pattern: "/v1/tts", Endpoint: "tts", Access: httpx.APIKey, Handler: s.handleTTSStream},
		{Method: http.MethodGet, Pattern: "/v1/tts/voices", Endpoint: "tts", Access: httpx.APIKey, Handler: s.handleVoices},
		{Method: http.MethodGet, Pattern: "/v1/custom-voices", Endpoint: "tts", Access: httpx.APIKey, Handler: s.handleCustomVoices},
		{Method: http.MethodPost, Pattern: "/v1/stt", Endpoint: "stt", Access: httpx.APIKey, Handler: s.handleSTT},
		{Method: http.MethodGet, Pattern: "/v1/stt", Endpoint: "stt", Access: httpx.APIKey, Handler: s.handleSTTStream},
	}
}

// Synthesize renders req with the configured engine as PCM at
// req.SampleRate (24 kHz when 0). It checks the text's speech tags, voice
// and language the way POST /v1/tts does.
func (s *Service) Synthesize(ctx context.Context, req Request) (*Audio, error) {
	if _, err := parseTags(req.Text); err != nil {
		return nil, err
	}
	if req.Voice.ID == "" {
		req.Voice, _ = LookupVoice(DefaultVoice)
	}
	if req.Language == "" {
		req.Language = "auto"
	} else if lang, err := s.language(req.Language, "language"); err == nil {
		req.Language = lang
	} else {
		return nil, fmt.Errorf("synthesize: unknown language %q", req.Language)
	}
	a, err := s.tts.Synthesize(ctx, &req)
	if err != nil {
		return nil, fmt.Errorf("synthesize: %w", err)
	}
	return a, nil
}

// RenderG711 renders text as 8 kHz G.711 (CodecMulaw or CodecAlaw), for
// a greeting cache that plays it straight into RTP.
func (s *Service) RenderG711(ctx context.Context, req Request, codec Codec) ([]byte, error) {
	if codec != CodecMulaw && codec != CodecAlaw {
		return nil, fmt.Errorf("render g711: codec %q is not mulaw or alaw", codec)
	}
	req.SampleRate, req.Timestamps = 8000, false
	a, err := s.Synthesize(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.enc.Encode(ctx, a.PCM, Format{Codec: codec, SampleRate: 8000})
}

// track registers a streaming connection so Close can end it; it reports
// false once the service is closed.
func (s *Service) track(c closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Service) untrack(c closer) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close ends every streaming connection and waits for their goroutines.
// It is idempotent.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// TranscribePCM transcribes raw PCM16LE mono audio at rate with the
// configured STT engine (the agent runtime's transcript fallback), in the
// background: a local decoder yields to the calls. Without an STT engine
// it returns ErrEngineUnavailable.
func (s *Service) TranscribePCM(ctx context.Context, pcm []byte, rate int) (string, error) {
	if s.stt == nil {
		return "", ErrEngineUnavailable
	}
	tr, err := s.stt.Transcribe(ctx, &STTRequest{File: bytes.NewReader(pcm), FileSize: int64(len(pcm)),
		Fields: []Field{{Name: "audio_format", Value: "pcm"}, {Name: "sample_rate", Value: strconv.Itoa(rate)}}, Background: true})
	if err != nil {
		return "", err
	}
	return tr.Text, nil
}

// HasSTT reports whether an STT engine is configured and ready (the
// local one's program was found at start).
func (s *Service) HasSTT() bool { return s.stt != nil && s.sttReady }
