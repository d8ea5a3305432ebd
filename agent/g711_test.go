package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
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
	mu     sync.Mutex
	played []byte
}

func (p *fakePhone) ID() string { return "call-1" }
func (p *fakePhone) Rate() int  { return 8000 }
func (p *fakePhone) Play(_ string, pcm []byte) {
	p.mu.Lock()
	p.played = append(p.played, pcm...)
	p.mu.Unlock()
}
func (p *fakePhone) Flush() (string, int)                   { return "", 0 }
func (p *fakePhone) Pending() time.Duration                 { return 0 }
func (p *fakePhone) Hangup(string)                          {}
func (p *fakePhone) Transfer(context.Context, string) error { return nil }
func (p *fakePhone) Note(call.Note)                         {}
func (p *fakePhone) SpeechStarted()                         {}
func (p *fakePhone) SendDTMF(context.Context, string) error { return nil }
func (p *fakePhone) bytes() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.played...)
}

// TestG711Session: with a provider speaking audio/pcmu the call runs at
// 8 kHz and the caller's G.711 codes reach the provider unchanged; the
// provider's G.711 is decoded for the phone without resampling.
func TestG711Session(t *testing.T) {
	fs := newFakeSession()
	rt := NewRuntime(nil, RuntimeOptions{Engines: map[string]realtime.Engine{EngineUpstream: fakeEngine{fs}}, UpstreamFormat: realtime.FormatPCMU})
	cfg := &Config{ID: "ag_1", Settings: Settings{Engine: EngineUpstream, Voice: "eve", Model: DefaultModel}}
	b := newBridge(rt, cfg, zerolog.Nop())
	require.Equal(t, 8000, b.AudioRate())
	require.Equal(t, realtime.FormatPCMU, b.sessCfg.InputFormat().FormatType())
	require.Equal(t, realtime.FormatPCMU, b.sessCfg.OutputFormat().FormatType())
	require.NoError(t, b.Prepare(context.Background()))

	// The caller's codes: every µ-law byte, decoded by the call to PCM16LE.
	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	pcm := media.PCMU.DecodeFrame(nil, codes)
	le := make([]byte, 0, 2*len(pcm))
	for _, v := range pcm {
		le = append(le, byte(v), byte(uint16(v)>>8))
	}
	b.Audio(le)
	fs.mu.Lock()
	got := fs.audio[0]
	fs.mu.Unlock()
	require.Len(t, got, 256)
	for i, c := range got {
		if i == 0x7f || i == 0xff { // µ-law has two zeros; both decode to 0
			continue
		}
		require.Equal(t, byte(i), c, "code %#x", i)
	}

	ph := &fakePhone{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, ph) }()
	fs.events <- &realtime.ResponseOutputAudioDelta{ItemID: "it1", Delta: codes}
	require.Eventually(t, func() bool { return len(ph.bytes()) == 2*len(codes) }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, le, ph.bytes())
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, b.Close())
}
