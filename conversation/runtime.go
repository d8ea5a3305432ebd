package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"switchboard/agent"
	"switchboard/dtmf"
	"switchboard/realtime"
	"switchboard/stream"
)

// Greeter renders a sentence to PCM16LE at rate with the agent's voice, so
// the greeting, the comfort prompt, the transfer announcement and the
// fallback apology play at once, without waiting for the model. It is
// expected to cache what it rendered (see Config.Prompts).
type Greeter interface {
	Render(ctx context.Context, text, voice string, rate int) ([]byte, error)
}

// Transcriber turns the caller's audio of one turn (PCM16LE mono at rate)
// into text: the fallback transcript of calls whose realtime provider
// gives none.
type Transcriber interface {
	Transcribe(ctx context.Context, pcm []byte, rate int) (string, error)
}

// ToolCaller runs a custom tool: it POSTs the call to the tool's URL and
// returns the response body (or an error).
type ToolCaller interface {
	CallTool(ctx context.Context, t agent.Tool, c ToolCall) (string, error)
}

// ToolCall is one call of a custom tool.
type ToolCall struct {
	// ID is the model's function call id, PhoneCallID the phone call's.
	ID, PhoneCallID string
	// Arguments is the model's JSON arguments.
	Arguments string
	// Variables are the phone call's variables.
	Variables agent.Vars
}

// RuntimeOptions configure the agent runtime.
type RuntimeOptions struct {
	// Metrics, when set, count provider failures.
	Metrics *Metrics
	// Engines by name ("echo", "upstream"); an agent whose engine is
	// missing falls back as if the engine could not be reached.
	Engines map[string]realtime.Engine
	// Greeter renders greetings and apologies locally (optional: without
	// it the model speaks the greeting).
	Greeter Greeter
	// Tools runs custom tools (optional: without it they answer an error).
	Tools ToolCaller
	// Contexts asks numbers' context_url for their calls' context
	// (optional: without it a context_url is not asked, and the record
	// says so).
	Contexts ContextSource
	// Transcriber, when set, transcribes the caller's turns the provider
	// did not transcribe (optional: without it the record keeps only the
	// provider's transcripts of the caller).
	Transcriber Transcriber
	// TranscriptWait is how long after speech_stopped the provider's
	// input transcript may take before the Transcriber is asked, when the
	// session has input transcription on (default 2 s). With it off the
	// Transcriber is asked at once.
	TranscriptWait time.Duration
	// TranscribeTimeout bounds one Transcriber call (default 15 s).
	TranscribeTimeout time.Duration
	// TranscribePiece is the most of a turn the STT fallback keeps before
	// it sends that much for transcription and goes on with the rest, so
	// a caller who never pauses costs one piece (default 5 s: 40 KB of a
	// telephone caller, kept as 8 kHz G.711; at least 2 s).
	TranscribePiece time.Duration
	// Transcriptions bounds the Transcriber calls in progress across all
	// calls (default the number of CPUs, at least 2): a turn waits for
	// one, compact, rather than holding its decoded audio in a queue of
	// the Transcriber's.
	Transcriptions int
	// TranscribeBacklog bounds the caller audio waiting for the
	// Transcriber across all calls, counted at 8 kHz G.711 (default 5 min:
	// 2.4 MB); a turn past it is not transcribed (logged once a call,
	// counted in switchboard_stt_fallback_dropped_total).
	TranscribeBacklog time.Duration
	// ComfortDelay is how long a tool (a keypad send, a transfer) may run
	// before the caller hears the agent's comfort prompt, then a soft
	// comfort tone (default 1 s).
	ComfortDelay time.Duration
	// CancelGrace is how long after speech_started the runtime waits for
	// the provider to cancel the response itself before it sends
	// response.cancel (default 150 ms).
	CancelGrace time.Duration
	// ReconnectTimeout bounds the one reconnect after an upstream failure
	// mid-call: the caller hears silence meanwhile, and the apology once
	// it runs out (default DefaultReconnectTimeout).
	ReconnectTimeout time.Duration
	// AnswerTimeout bounds how long an agent's call rings while its
	// session opens before it is refused (default 5 s).
	AnswerTimeout time.Duration
	// DTMFIdle flushes the caller's buffered keys to the model after this
	// long without a key (default dtmf.DefaultIdleTimeout, the spec's
	// 2.5 s).
	DTMFIdle time.Duration
	// Transfers carries out the transfers that place a leg (bridged,
	// warm, REFER with Replaces, auto) and holds callers (optional:
	// without it they are refused and transfer_call targets with a mode
	// fail).
	Transfers Transfers
	// UpstreamFormat is the audio format spoken with the upstream engine:
	// realtime.FormatPCM (24 kHz, the default), or FormatPCMU / FormatPCMA
	// for a provider that takes G.711 at 8 kHz (no resampling at all).
	UpstreamFormat string
	// Streams dials the bots of stream-routed calls (optional: without it
	// such a call is refused with 503).
	Streams *stream.Service
}

// DefaultAnswerTimeout is how long an agent's call rings at most while
// its model session opens: long enough for a cold provider connection,
// short enough that a caller does not give up first.
const DefaultAnswerTimeout = 5 * time.Second

// DefaultReconnectTimeout is how long a call whose provider session
// dropped waits, silent, for a new one before the caller hears the
// apology. A drop is rarely followed by a quick recovery, and waiting
// longer only lengthens the silence (it was 5 s, heard as a dead line):
// 700 ms lets a healthy provider take the call back (TCP, TLS and the
// session setup, a few round trips) and the apology still starts within
// a second of the drop.
const DefaultReconnectTimeout = 700 * time.Millisecond

// Agents loads agent records (agent.Service).
type Agents interface {
	Load(ctx context.Context, id string) (*agent.Config, error)
}

// Runtime makes the per-call conversations of agents.
type Runtime struct {
	agents Agents
	opts   RuntimeOptions
	// sttBounds are the STT fallback's bounds, shared by all calls.
	sttBounds *sttBounds
}

// NewRuntime returns the runtime over the agent records.
func NewRuntime(agents Agents, opts RuntimeOptions) *Runtime {
	if opts.AnswerTimeout == 0 {
		opts.AnswerTimeout = DefaultAnswerTimeout
	}
	if opts.ComfortDelay == 0 {
		opts.ComfortDelay = time.Second
	}
	if opts.CancelGrace == 0 {
		opts.CancelGrace = 150 * time.Millisecond
	}
	if opts.ReconnectTimeout == 0 {
		opts.ReconnectTimeout = DefaultReconnectTimeout
	}
	if opts.TranscriptWait == 0 {
		opts.TranscriptWait = 2 * time.Second
	}
	if opts.TranscribeTimeout == 0 {
		opts.TranscribeTimeout = 15 * time.Second
	}
	if opts.DTMFIdle == 0 {
		opts.DTMFIdle = dtmf.DefaultIdleTimeout
	}
	if opts.TranscribePiece == 0 {
		opts.TranscribePiece = 5 * time.Second
	}
	if opts.Transcriptions <= 0 {
		opts.Transcriptions = max(runtime.NumCPU(), 2)
	}
	if opts.TranscribeBacklog == 0 {
		opts.TranscribeBacklog = 5 * time.Minute
	}
	return &Runtime{agents: agents, opts: opts, sttBounds: newSTTBounds(opts.Transcriptions, opts.TranscribeBacklog, opts.Metrics)}
}

// AudioRates are the sample rates of c's calls (8000 when its sessions
// speak G.711, else 24000; both for the echo engine, which speaks the
// caller's G.711 or 24 kHz PCM16): the rates to pre-render its prompts at.
func (r *Runtime) AudioRates(c *agent.Config) []int {
	if c.Settings.Engine == agent.EngineEcho {
		return []int{8000, modelRate}
	}
	if f := r.format(c.Settings.Engine); f == realtime.FormatPCMU || f == realtime.FormatPCMA {
		return []int{8000}
	}
	return []int{modelRate}
}

// format is the audio format of an agent's sessions.
func (r *Runtime) format(engine string) string {
	if engine == agent.EngineUpstream && (r.opts.UpstreamFormat == realtime.FormatPCMU || r.opts.UpstreamFormat == realtime.FormatPCMA) {
		return r.opts.UpstreamFormat
	}
	return realtime.FormatPCM
}

// sessionConfig is the realtime session an agent's calls open: its
// instructions, voice, model, tools and server VAD, with audio in format
// (realtime.FormatPCM at 24 kHz, or G.711) both ways.
func sessionConfig(c *agent.Config, format string) realtime.SessionConfig {
	s := c.Settings
	instr := s.Instructions
	if s.Language != "" && s.Language != "auto" {
		instr += fmt.Sprintf("\n\nSpeak %s unless the caller uses another language.", s.Language)
	}
	create, interrupt := true, true
	cfg := realtime.SessionConfig{
		Type:             "realtime",
		Model:            s.Model,
		OutputModalities: []string{"audio"},
		Instructions:     &instr,
		Audio: &realtime.AudioConfig{
			Input: &realtime.AudioInput{
				Format: audioFormat(format),
				TurnDetection: realtime.Some(realtime.TurnDetection{Type: realtime.TurnServerVAD,
					CreateResponse: &create, InterruptResponse: &interrupt}),
			},
			Output: &realtime.AudioOutput{Format: audioFormat(format), Voice: realtime.Voice{Name: s.Voice}},
		},
	}
	if len(s.TransferTargets) > 0 {
		names := make([]string, 0, len(s.TransferTargets))
		desc := "Transfer the caller to one of: "
		for i, t := range s.TransferTargets {
			names = append(names, t.Name)
			if i > 0 {
				desc += "; "
			}
			desc += t.Name
			if t.Description != "" {
				desc += " (" + t.Description + ")"
			}
		}
		params, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"target"},
			"properties": map[string]any{"target": map[string]any{"type": "string", "enum": names},
				"summary": map[string]any{"type": "string", "description": "for a warm transfer: one or two sentences the person taking the call hears first (who is calling and what they need)"}}})
		cfg.Tools = append(cfg.Tools, realtime.Tool{Type: "function", Name: agent.ToolTransferCall, Description: desc + ".", Parameters: params})
	}
	endParams, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		"reason": map[string]any{"type": "string", "description": "why the call ends"}}})
	cfg.Tools = append(cfg.Tools, realtime.Tool{Type: "function", Name: agent.ToolEndCall,
		Description: "End the phone call after your current sentence, when the conversation is over.", Parameters: endParams})
	dtmfParams, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"digits"}, "properties": map[string]any{
		"digits": map[string]any{"type": "string", "description": "keys to press: 0-9, *, #, A-D"}}})
	cfg.Tools = append(cfg.Tools, realtime.Tool{Type: "function", Name: agent.ToolSendDTMF,
		Description: "Press keys on the phone keypad, e.g. to navigate another phone menu.", Parameters: dtmfParams})
	for _, t := range s.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		cfg.Tools = append(cfg.Tools, realtime.Tool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	return cfg
}

func audioFormat(format string) *realtime.AudioFormat {
	if format == realtime.FormatPCMU || format == realtime.FormatPCMA {
		return &realtime.AudioFormat{Type: format}
	}
	return realtime.PCM24k()
}
