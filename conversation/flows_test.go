package conversation

import (
	"context"
	"strings"
	"switchboard/agent"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
)

func TestTurnAudio(t *testing.T) {
	ta := newTurnAudio(media.PCM16(8000))
	frame := func(v byte) []byte { // 20 ms at 8 kHz
		b := make([]byte, 320)
		for i := range b {
			b[i] = v
		}
		return b
	}
	require.Nil(t, ta.stop(), "no turn open")
	for i := range 100 { // 2 s before the turn: only the pre-roll is kept
		ta.add(frame(byte(i)))
	}
	require.Equal(t, 8000, len(ta.pre), "500 ms of pre-roll")
	ta.start()
	ta.start() // a second speech_started keeps the turn
	ta.add(frame(200))
	pcm := ta.stop()
	require.Len(t, pcm, 8000+320)
	require.Equal(t, byte(75), pcm[0], "the pre-roll is the last 25 frames")
	require.Equal(t, byte(200), pcm[len(pcm)-1])

	ta.start()
	for range 3100 { // 62 s: cut at 60 s
		ta.add(frame(1))
	}
	require.Len(t, ta.stop(), 2*8000*60)
}

// notePhone records notes and plays nothing.
type notePhone struct {
	fakePhone
	mu    sync.Mutex
	notes []call.Note
}

func (p *notePhone) Note(n call.Note) {
	p.mu.Lock()
	p.notes = append(p.notes, n)
	p.mu.Unlock()
}

func (p *notePhone) userLines() []call.Note {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []call.Note
	for _, n := range p.notes {
		if n.Kind == call.NoteTranscript && n.Role == "user" {
			out = append(out, n)
		}
	}
	return out
}

// blockingSTT answers once released, counting calls and concurrency.
type blockingSTT struct {
	release       chan struct{}
	calls, active atomic.Int64
	peak          atomic.Int64
	rates         chan int
}

func (s *blockingSTT) Transcribe(ctx context.Context, pcm []byte, rate int) (string, error) {
	s.calls.Add(1)
	n := s.active.Add(1)
	defer s.active.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	s.rates <- rate
	select {
	case <-s.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return " turn of " + strings.Repeat("x", len(pcm)/48000) + " ", nil
}

// TestSTTFallbackBridge: turns the provider did not transcribe go to the
// Transcriber at most two at a time without holding up the conversation,
// and come back as user lines with source stt; a turn the provider
// transcribed is not sent, one whose transcription failed is sent at once;
// Close leaves no goroutine behind.
func TestSTTFallbackBridge(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fs := newFakeSession()
	stt := &blockingSTT{release: make(chan struct{}), rates: make(chan int, 16)}
	rt := NewRuntime(nil, RuntimeOptions{Engines: map[string]realtime.Engine{agent.EngineUpstream: fakeEngine{fs}}, Transcriber: stt,
		TranscriptWait: 300 * time.Millisecond})
	ph := &notePhone{}
	b := newBridge(rt, &agent.Config{ID: "ag_1", Settings: agent.Settings{Engine: agent.EngineUpstream, Voice: "eve", Model: agent.DefaultModel}}, ph, zerolog.Nop())
	require.NoError(t, b.Prepare(context.Background()))
	require.False(t, b.stt.transcribes)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	second := make([]byte, 48000) // 1 s at 24 kHz
	turn := func(item string) {
		fs.events <- &realtime.InputAudioBufferSpeechStarted{ItemID: item}
		time.Sleep(10 * time.Millisecond)
		b.Audio(second)
		time.Sleep(10 * time.Millisecond)
		fs.events <- &realtime.InputAudioBufferSpeechStopped{ItemID: item}
		time.Sleep(10 * time.Millisecond)
	}
	for _, it := range []string{"u1", "u2", "u3", "u4"} {
		turn(it)
	}
	require.Eventually(t, func() bool { return stt.calls.Load() == 2 }, 2*time.Second, 5*time.Millisecond)
	require.Equal(t, 24000, <-stt.rates)
	// The conversation goes on while two are stuck.
	fs.events <- &realtime.ResponseOutputAudioDelta{ItemID: "a1", Delta: make([]byte, 480)}
	require.Eventually(t, func() bool { return len(ph.bytes()) == 480 }, 2*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.EqualValues(t, 2, stt.calls.Load(), "more than two at once")
	close(stt.release)
	require.Eventually(t, func() bool { return len(ph.userLines()) == 4 }, 2*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 2, stt.peak.Load())
	for _, n := range ph.userLines() {
		require.Equal(t, "turn of x", n.Text, "the turn's second of audio, text trimmed")
		require.Equal(t, map[string]string{"source": "stt"}, n.Data)
	}

	// The session transcribes now: a transcribed turn is not sent, a
	// failed one at once, an untranscribed one after TranscriptWait.
	fs.events <- &realtime.SessionUpdated{Session: realtime.SessionConfig{Audio: &realtime.AudioConfig{
		Input: &realtime.AudioInput{Transcription: realtime.Some(realtime.Transcription{Model: "m"})}}}}
	turn("p1")
	fs.events <- &realtime.InputAudioTranscriptionCompleted{ItemID: "p1", Transcript: "from the provider"}
	turn("p2")
	fs.events <- &realtime.InputAudioTranscriptionFailed{ItemID: "p2"}
	require.Eventually(t, func() bool { return stt.calls.Load() == 5 }, 2*time.Second, 5*time.Millisecond)
	stopped := time.Now()
	turn("p3")
	require.Eventually(t, func() bool { return stt.calls.Load() == 6 }, 2*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(stopped), 300*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	require.EqualValues(t, 6, stt.calls.Load(), "the provider's turn was sent")
	require.Len(t, ph.userLines(), 7)

	cancel()
	require.NoError(t, <-done)
	require.NoError(t, b.Close())
}

func TestPrompts(t *testing.T) {
	empty := ""
	for _, tc := range []struct {
		name string
		s    agent.Settings
		want []string
	}{
		{"defaults", agent.Settings{}, []string{agent.DefaultComfortPrompt}},
		{"greeting, targets, apology", agent.Settings{Greeting: "Hi.", TransferTargets: []agent.TransferTarget{{Name: "a", URI: "sip:a@b"}},
			Fallback: agent.FallbackApologize}, []string{"Hi.", agent.DefaultComfortPrompt, agent.DefaultTransferAnnouncement, agent.DefaultApology}},
		{"none", agent.Settings{ComfortPrompt: &empty, TransferAnnouncement: &empty, TransferTargets: []agent.TransferTarget{{Name: "a", URI: "sip:a@b"}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, (&agent.Config{Settings: tc.s}).Prompts())
		})
	}
}
