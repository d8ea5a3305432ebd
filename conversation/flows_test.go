package conversation

import (
	"context"
	"strings"
	"switchboard/agent"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/realtime"
)

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
	return " turn of " + strings.Repeat("x", len(pcm)/16000) + " ", nil // a second of 8 kHz PCM16: one x
}

// TestSTTFallbackBridge: turns the provider did not transcribe go to the
// Transcriber at most two at a time without holding up the conversation,
// and come back as user lines with source stt; a turn the provider
// transcribed is not sent, one whose transcription failed is sent at once,
// one the provider may still transcribe after TranscriptWait; Close leaves
// no goroutine behind (the bubble ends only once all of them did). It runs
// on synctest's clock: synctest.Wait lets the loop take what it was given,
// time.Sleep moves its ticker on.
func TestSTTFallbackBridge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = 300 * time.Millisecond
		fs := newFakeSession()
		stt := &blockingSTT{release: make(chan struct{}), rates: make(chan int, 16)}
		rt := NewRuntime(nil, RuntimeOptions{Engines: map[string]realtime.Engine{agent.EngineUpstream: fakeEngine{fs}}, Transcriber: stt,
			TranscriptWait: wait})
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
			synctest.Wait() // the loop opened the turn
			b.Audio(second)
			fs.events <- &realtime.InputAudioBufferSpeechStopped{ItemID: item}
			synctest.Wait()
		}
		for _, it := range []string{"u1", "u2", "u3", "u4"} {
			turn(it)
		}
		time.Sleep(tick) // the loop's next tick hands out the due turns
		synctest.Wait()
		require.EqualValues(t, 2, stt.calls.Load())
		require.Equal(t, 8000, <-stt.rates, "the turn as the telephone had it")
		// The conversation goes on while two are stuck.
		fs.events <- &realtime.ResponseOutputAudioDelta{ItemID: "a1", Delta: make([]byte, 480)}
		synctest.Wait()
		require.Len(t, ph.bytes(), 480)
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 2, stt.calls.Load(), "more than two at once")
		close(stt.release)
		time.Sleep(5 * tick)
		synctest.Wait()
		require.Len(t, ph.userLines(), 4)
		require.EqualValues(t, 4, stt.calls.Load())
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
		time.Sleep(2 * tick)
		synctest.Wait()
		require.EqualValues(t, 5, stt.calls.Load(), "the failed one at once")
		turn("p3")
		time.Sleep(wait - tick)
		synctest.Wait()
		require.EqualValues(t, 5, stt.calls.Load(), "the provider may still transcribe it")
		time.Sleep(2 * tick)
		synctest.Wait()
		require.EqualValues(t, 6, stt.calls.Load(), "after the wait")
		time.Sleep(2 * wait)
		synctest.Wait()
		require.EqualValues(t, 6, stt.calls.Load(), "the provider's turn was sent")
		require.Len(t, ph.userLines(), 7)

		cancel()
		require.NoError(t, <-done)
		require.NoError(t, b.Close())
	})
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
