package echo

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"switchboard/realtime"
)

// Options configure the echo engine. Zero fields take the documented
// defaults.
type Options struct {
	// Synthesizer speaks user text messages (default DefaultSynthesizer():
	// espeak-ng when installed, Tone otherwise).
	Synthesizer Synthesizer
	// Threshold is the default turn_detection.threshold (0..1, default
	// 0.5), mapped to an energy gate of -70 + 60·threshold dBFS.
	Threshold float64
	// SilenceDuration is the default silence_duration_ms (default 500 ms).
	SilenceDuration time.Duration
	// PrefixPadding is the default prefix_padding_ms (default 300 ms).
	PrefixPadding time.Duration
	// MinSpeech is how much consecutive voiced audio starts a turn
	// (default 30 ms), so clicks do not.
	MinSpeech time.Duration
	// Chunk is the audio per response.output_audio.delta (default 100 ms).
	Chunk time.Duration
	// Lead is how far ahead of real time response audio is sent (default
	// 200 ms; negative means none: strictly real time).
	Lead time.Duration
	// Unpaced sends response audio as fast as possible (tests).
	Unpaced bool
	// Model is the model name in session.created (default "echo").
	Model string
	// Voice is the voice of a session that names none (default "eve",
	// the spec's default voice).
	Voice string
	// AudioQueue is how many appended frames may wait for the session
	// before the oldest is dropped (default 500: 10 s of 20 ms frames).
	AudioQueue int
	// EventBuffer is the capacity of the Events channel (default 256).
	EventBuffer int
	// SynthTimeout bounds one synthesis (default 10 s).
	SynthTimeout time.Duration
	// MaxTurn is the most of a caller's turn a session keeps (default
	// DefaultMaxTurn): the answer repeats the turn's last MaxTurn, and the
	// user items of the conversation keep at most that much audio in all,
	// so a session's memory stays bounded however long the caller speaks
	// (PCM input is kept as 8 kHz µ-law: 8 KB a second).
	MaxTurn time.Duration
	// Logger receives the engine's logs; default is disabled.
	Logger *zerolog.Logger
}

// DefaultVoice is the spec's default voice, the voice of a session that
// names none.
const DefaultVoice = "eve"

// DefaultMaxTurn is the default Options.MaxTurn: a caller's sentence
// (5 to 8 s) comes back whole, for 2×80 KB a session at most (the turn
// being spoken and the last one kept, as 8 kHz µ-law).
const DefaultMaxTurn = 10 * time.Second

func (o Options) withDefaults() Options {
	if o.Synthesizer == nil {
		o.Synthesizer = DefaultSynthesizer()
	}
	if o.Threshold <= 0 || o.Threshold > 1 {
		o.Threshold = 0.5
	}
	if o.SilenceDuration <= 0 {
		o.SilenceDuration = 500 * time.Millisecond
	}
	if o.PrefixPadding <= 0 {
		o.PrefixPadding = 300 * time.Millisecond
	}
	if o.MinSpeech <= 0 {
		o.MinSpeech = 30 * time.Millisecond
	}
	if o.Chunk <= 0 {
		o.Chunk = 100 * time.Millisecond
	}
	if o.Lead < 0 {
		o.Lead = 0
	} else if o.Lead == 0 {
		o.Lead = 200 * time.Millisecond
	}
	if o.Model == "" {
		o.Model = "echo"
	}
	if o.Voice == "" {
		o.Voice = DefaultVoice
	}
	if o.AudioQueue <= 0 {
		o.AudioQueue = 500
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 256
	}
	if o.SynthTimeout <= 0 {
		o.SynthTimeout = 10 * time.Second
	}
	if o.MaxTurn <= 0 {
		o.MaxTurn = DefaultMaxTurn
	}
	if o.Logger == nil {
		l := zerolog.Nop()
		o.Logger = &l
	}
	return o
}

// Engine is the echo realtime.Engine.
type Engine struct {
	opts     Options
	sessions atomic.Uint64
}

var _ realtime.Engine = (*Engine)(nil)

// New returns an echo engine.
func New(opts Options) *Engine { return &Engine{opts: opts.withDefaults()} }

// Open starts an in-process session with cfg applied to the engine's
// defaults: its events begin with session.created, which reports the
// session in force (cfg's model, voice, formats, turn detection), and
// conversation.created. A cfg that Validate refuses is an error
// (*realtime.ConfigError). ctx only bounds Open.
func (e *Engine) Open(ctx context.Context, cfg realtime.SessionConfig) (realtime.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newSession(e, e.sessions.Add(1), cfg)
}

func (e *Engine) defaultConfig(id string) realtime.SessionConfig {
	o := e.opts
	empty := ""
	return realtime.SessionConfig{
		Type:             "realtime",
		Object:           "realtime.session",
		ID:               id,
		Model:            o.Model,
		OutputModalities: []string{"audio"},
		Instructions:     &empty,
		Audio: &realtime.AudioConfig{
			Input: &realtime.AudioInput{
				Format:        realtime.PCM24k(),
				Transcription: realtime.Null[realtime.Transcription](),
				TurnDetection: realtime.Some(e.fillVAD(realtime.TurnDetection{Type: realtime.TurnServerVAD})),
			},
			Output: &realtime.AudioOutput{Format: realtime.PCM24k(), Voice: realtime.Voice{Name: o.Voice}, Speed: ptr(1.0)},
		},
		Tools:      []realtime.Tool{},
		ToolChoice: []byte(`"auto"`),
	}
}

// fillVAD completes a turn_detection with the engine's defaults.
func (e *Engine) fillVAD(td realtime.TurnDetection) realtime.TurnDetection {
	o := e.opts
	if td.Threshold == nil {
		td.Threshold = ptr(o.Threshold)
	}
	if td.PrefixPaddingMs == nil {
		td.PrefixPaddingMs = ptr(int(o.PrefixPadding / time.Millisecond))
	}
	if td.SilenceDurationMs == nil {
		td.SilenceDurationMs = ptr(int(o.SilenceDuration / time.Millisecond))
	}
	if td.CreateResponse == nil {
		td.CreateResponse = ptr(true)
	}
	if td.InterruptResponse == nil {
		td.InterruptResponse = ptr(true)
	}
	return td
}

func ptr[T any](v T) *T { return &v }
