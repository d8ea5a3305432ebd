package app

import (
	"context"
	"fmt"
	"switchboard/media"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"switchboard/config"
	"switchboard/speech"
)

// buildSpeech makes the TTS/STT service from the configuration.
func buildSpeech(cfg *config.Config, log zerolog.Logger) (*speech.Service, error) {
	s, err := speech.NewService(speech.Options{
		TTSEngine: cfg.Speech.TTSEngine, STTEngine: cfg.Speech.STTEngine, FallbackPriority: cfg.Speech.STTFallbackPriority,
		UpstreamURL: cfg.Speech.UpstreamURL, UpstreamKeyEnv: cfg.Upstream.APIKeyEnv,
	}, log.With().Str("component", "speech").Logger())
	if err != nil {
		return nil, fmt.Errorf("speech: %w", err)
	}
	return s, nil
}

// echoVoices gives the echo engine the TTS engine to speak its text
// answers with, in the session's voice (echo.Synthesizer): what a caller
// hears of a session's voice on the offline engine.
type echoVoices struct{ s *speech.Service }

func (e echoVoices) Synthesize(ctx context.Context, text, voice string, rate int) ([]int16, error) {
	v, ok := speech.LookupVoice(voice)
	if !ok {
		v, _ = speech.LookupVoice("")
	}
	a, err := e.s.Synthesize(ctx, speech.Request{Text: text, Voice: v, SampleRate: rate})
	if err != nil {
		return nil, err
	}
	return a.PCM, nil
}

// sttTimeout bounds one fallback transcription request to the provider.
const sttTimeout = 30 * time.Second

// sttFallback is the agent runtime's transcript fallback: the speech
// service's STT engine (conversation.Transcriber).
type sttFallback struct{ s *speech.Service }

func (f sttFallback) Transcribe(ctx context.Context, pcm []byte, rate int) (string, error) {
	return f.s.TranscribePCM(ctx, pcm, rate)
}

// greeter renders agents' greetings and apologies with the TTS engine and
// keeps them: a greeting is rendered once per (text, voice, rate), so a
// call plays it from its first RTP packet after answer.
type greeter struct {
	tts *speech.Service
	log zerolog.Logger
	// ctx ends the warming goroutines (Close), which wg waits for.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	cache map[greetKey][]byte
}

type greetKey struct {
	text, voice string
	rate        int
}

// maxGreetings bounds the cache; past it the oldest entries go (a map has
// no order, so an arbitrary half is dropped: re-rendering is cheap).
const maxGreetings = 512

func newGreeter(tts *speech.Service, log zerolog.Logger) *greeter {
	ctx, cancel := context.WithCancel(context.Background())
	return &greeter{tts: tts, log: log, ctx: ctx, cancel: cancel, cache: map[greetKey][]byte{}}
}

// Close stops the prompts still warming and waits for them.
func (g *greeter) Close() {
	g.cancel()
	g.wg.Wait()
}

// Render returns PCM16LE of text at rate (conversation.Greeter).
func (g *greeter) Render(ctx context.Context, text, voice string, rate int) ([]byte, error) {
	k := greetKey{text, voice, rate}
	g.mu.Lock()
	pcm, ok := g.cache[k]
	g.mu.Unlock()
	if ok {
		return pcm, nil
	}
	v, ok := speech.LookupVoice(voice)
	if !ok {
		v, _ = speech.LookupVoice("")
	}
	a, err := g.tts.Synthesize(ctx, speech.Request{Text: text, Voice: v, SampleRate: rate})
	if err != nil {
		return nil, err
	}
	pcm = media.AppendPCM16LE(nil, a.PCM)
	g.mu.Lock()
	if len(g.cache) >= maxGreetings {
		n := 0
		for key := range g.cache {
			delete(g.cache, key)
			if n++; n >= maxGreetings/2 {
				break
			}
		}
	}
	g.cache[k] = pcm
	g.mu.Unlock()
	return pcm, nil
}

// Warm renders texts at each of rates, one after the other, ahead of the
// first call (agent saved, appliance started); failures are logged, the
// call will retry. Close stops it.
func (g *greeter) Warm(voice string, rates []int, texts ...string) {
	if len(texts) == 0 {
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for _, rate := range rates {
			for _, text := range texts {
				if text == "" || g.ctx.Err() != nil {
					continue
				}
				if _, err := g.Render(g.ctx, text, voice, rate); err != nil && g.ctx.Err() == nil {
					g.log.Warn().Err(err).Str("text", text).Msg("prompt not pre-rendered")
				} else if err == nil {
					g.log.Debug().Str("text", text).Int("rate", rate).Msg("prompt pre-rendered")
				}
			}
		}
	}()
}
