package conversation

import (
	"bytes"
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/agent"
	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
	"switchboard/realtime/echo"
)

// fakeSession records what the bridge sends and lets the test push server
// events.
type fakeSession struct {
	mu     sync.Mutex
	audio  [][]byte
	sent   []realtime.Event
	events chan realtime.Event
	done   chan struct{}
	once   sync.Once
}

func newFakeSession() *fakeSession {
	return &fakeSession{events: make(chan realtime.Event, 64), done: make(chan struct{})}
}

func (f *fakeSession) Send(_ context.Context, e realtime.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, e)
	return nil
}

func (f *fakeSession) AppendAudio(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audio = append(f.audio, append([]byte(nil), b...))
	return nil
}
func (f *fakeSession) Events() <-chan realtime.Event { return f.events }
func (f *fakeSession) Done() <-chan struct{}         { return f.done }
func (f *fakeSession) Err() error                    { return nil }
func (f *fakeSession) Stats() realtime.Stats         { return realtime.Stats{} }
func (f *fakeSession) Close() error {
	f.once.Do(func() { close(f.done); close(f.events) })
	return nil
}

type fakeEngine struct{ s *fakeSession }

func (e fakeEngine) Open(_ context.Context, cfg realtime.SessionConfig) (realtime.Session, error) {
	e.s.events <- &realtime.SessionUpdated{Session: cfg}
	return e.s, nil
}

// fakePhone records what the bridge plays.
type fakePhone struct {
	call.Parties // not used by the bridge's audio
	mu           sync.Mutex
	played       []byte
}

func (p *fakePhone) ID() string               { return "call-1" }
func (p *fakePhone) Route() call.Route        { return call.Route{} }
func (p *fakePhone) Info() call.LegInfo       { return call.LegInfo{Rate: 8000} } // a telephone caller
func (p *fakePhone) Logger() zerolog.Logger   { return zerolog.Nop() }
func (p *fakePhone) Context() context.Context { return context.Background() }
func (p *fakePhone) Snapshot() call.Snapshot  { return call.Snapshot{} }
func (p *fakePhone) Format() media.Format {
	return media.Format{Encoding: media.EncodingPCMU, Rate: 8000}
}
func (p *fakePhone) PlayPCM(id string, b []byte) { p.Play(id, b) }
func (p *fakePhone) Play(_ string, pcm []byte) {
	p.mu.Lock()
	p.played = append(p.played, pcm...)
	p.mu.Unlock()
}
func (p *fakePhone) Flush() (string, int)                                              { return "", 0 }
func (p *fakePhone) Pending() time.Duration                                            { return 0 }
func (p *fakePhone) Hangup(string, ...call.Header)                                     {}
func (p *fakePhone) Transfer(context.Context, string, func(int), ...call.Header) error { return nil }
func (p *fakePhone) Note(call.Note)                                                    {}
func (p *fakePhone) SendDTMF(context.Context, string) error                            { return nil }
func (p *fakePhone) MediaHealth() call.MediaHealth                                     { return call.MediaHealth{} }
func (p *fakePhone) bytes() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.played...)
}

// TestG711Session: with a provider speaking audio/pcmu the conversation
// takes and gives the phone's G.711 bytes as they are (the call passes
// them through): every µ-law code reaches the provider unchanged, and the
// provider's codes reach the phone unchanged.
func TestG711Session(t *testing.T) {
	fs := newFakeSession()
	rt := NewRuntime(nil, RuntimeOptions{Engines: map[string]realtime.Engine{agent.EngineUpstream: fakeEngine{fs}}, UpstreamFormat: realtime.FormatPCMU})
	cfg := &agent.Config{ID: "ag_1", Settings: agent.Settings{Engine: agent.EngineUpstream, Voice: "eve", Model: agent.DefaultModel}}
	ph := &fakePhone{}
	b := newBridge(rt, cfg, ph, zerolog.Nop())
	require.Equal(t, media.Format{Encoding: media.EncodingPCMU, Rate: 8000}, b.Format())
	require.Equal(t, realtime.FormatPCMU, b.sessCfg.InputFormat().FormatType())
	require.Equal(t, realtime.FormatPCMU, b.sessCfg.OutputFormat().FormatType())
	require.NoError(t, b.Prepare(context.Background()))

	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	b.Audio(codes)
	fs.mu.Lock()
	got := fs.audio[0]
	fs.mu.Unlock()
	require.Equal(t, codes, got)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	fs.events <- &realtime.ResponseOutputAudioDelta{ItemID: "it1", Delta: codes}
	require.Eventually(t, func() bool { return len(ph.bytes()) == len(codes) }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, codes, ph.bytes())
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, b.Close())
}

// agentsOf loads one agent.
type agentsOf struct{ c *agent.Config }

func (a agentsOf) Load(_ context.Context, id string) (*agent.Config, error) {
	if id != a.c.ID {
		return nil, agent.ErrUnknownAgent
	}
	return a.c, nil
}

// TestEchoAgentSpeaksCallersG711: an agent on the echo engine takes the
// caller's own G.711 (call.LegG711Or: the call passes it through), so its
// session speaks audio/pcmu both ways and the caller's turn comes back
// byte for byte: nothing is widened to 24 kHz, resampled back and coded
// again on the way in or out. A caller without G.711 keeps 24 kHz PCM16.
func TestEchoAgentSpeaksCallersG711(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := &agent.Config{ID: "ag_echo", Settings: agent.Settings{Engine: agent.EngineEcho, Voice: "eve", Model: agent.DefaultModel}}
	stt := &recordingSTT{}
	rt := NewRuntime(agentsOf{cfg}, RuntimeOptions{Engines: map[string]realtime.Engine{agent.EngineEcho: echo.New(echo.Options{Unpaced: true})},
		Transcriber: stt})
	require.Equal(t, []int{8000, 24000}, rt.AudioRates(cfg), "its prompts are rendered for both")
	ph := &fakePhone{} // a µ-law caller
	b := newBridge(rt, cfg, ph, zerolog.Nop())
	var conv call.Conversation = b
	require.Equal(t, call.LegG711Or(24000), conv.Format())
	require.NoError(t, conv.Prepare(context.Background()))
	require.Equal(t, media.FormatPCMU, b.Format())
	sc := b.config()
	require.Equal(t, realtime.FormatPCMU, sc.InputFormat().FormatType())
	require.Equal(t, realtime.FormatPCMU, sc.OutputFormat().FormatType())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- conv.Run(ctx) }()

	// A second of a loud tone, then silence: one turn, echoed. The frames
	// come at a phone's pace: the turn opens when the engine's VAD reports
	// speech, and frames pushed all at once were all before it (only the
	// pre-roll reached the STT fallback).
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	var said []byte
	for f := range 50 {
		<-tk.C
		pcm := make([]int16, 160)
		for i := range pcm {
			pcm[i] = int16(12000 * math.Sin(2*math.Pi*440*float64(f*160+i)/8000))
		}
		frame := media.PCMU.EncodeFrame(nil, pcm)
		said = append(said, frame...)
		conv.Audio(frame)
	}
	silence := bytes.Repeat([]byte{0xFF}, 160)
	for range 40 {
		<-tk.C
		conv.Audio(silence)
	}
	require.Eventually(t, func() bool { return bytes.Contains(ph.bytes(), said) }, 5*time.Second, 10*time.Millisecond,
		"the caller's turn did not come back byte for byte")
	// The echo gives no transcript: the STT fallback is sent the turn, the
	// caller's bytes decoded at 8 kHz (a second of tone and what the VAD
	// kept around it).
	require.Eventually(t, func() bool { return len(stt.got()) == 1 }, 5*time.Second, 10*time.Millisecond, "the turn was not transcribed")
	require.InDelta(t, 2*8000*1.5, stt.got()[0], 2*8000*0.6)
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, conv.Close())

	// A wideband caller (no G.711) keeps PCM16 at the model's rate.
	conv = newBridge(rt, cfg, &widebandPhone{}, zerolog.Nop())
	require.NoError(t, conv.Prepare(context.Background()))
	require.Equal(t, media.PCM16(24000), conv.Format())
	sc = conv.(*bridge).config()
	require.Equal(t, realtime.FormatPCM, sc.InputFormat().FormatType())
	require.NoError(t, conv.Close())
}

// widebandPhone is a caller whose leg has no G.711 (Opus, G.722).
type widebandPhone struct{ fakePhone }

func (*widebandPhone) Format() media.Format { return media.PCM16(24000) }
func (*widebandPhone) Info() call.LegInfo   { return call.LegInfo{Rate: 24000} }
