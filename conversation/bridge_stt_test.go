package conversation

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/agent"
	"switchboard/realtime"
)

// recordingSTT answers at once with the length of what it got, and keeps
// every request's size.
type recordingSTT struct {
	mu    sync.Mutex
	sizes []int
}

func (s *recordingSTT) Transcribe(_ context.Context, pcm []byte, rate int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes = append(s.sizes, len(pcm))
	return fmt.Sprintf("%d ms at %d", len(pcm)/2*1000/rate, rate), nil
}

func (s *recordingSTT) got() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.sizes...)
}

// TestSTTFallbackLongTurn: a caller who does not pause is transcribed in
// pieces of TranscribePiece as they speak, not in one turn at the end, so
// the call keeps a piece of audio at most; the pieces and the rest are the
// whole turn, each a user line of the record.
func TestSTTFallbackLongTurn(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fs := newFakeSession()
	stt := &recordingSTT{}
	rt := NewRuntime(nil, RuntimeOptions{Engines: map[string]realtime.Engine{agent.EngineUpstream: fakeEngine{fs}}, Transcriber: stt,
		TranscribePiece: 2 * time.Second})
	ph := &notePhone{}
	b := newBridge(rt, &agent.Config{ID: "ag_1", Settings: agent.Settings{Engine: agent.EngineUpstream, Voice: "eve", Model: agent.DefaultModel}}, ph, zerolog.Nop())
	require.NoError(t, b.Prepare(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	fs.events <- &realtime.InputAudioBufferSpeechStarted{ItemID: "u1"}
	require.Eventually(t, func() bool { b.stt.turns.mu.Lock(); defer b.stt.turns.mu.Unlock(); return b.stt.turns.on }, time.Second, time.Millisecond)
	frames := speechFrames(24000, 250, nil) // 5 s at 24 kHz
	for i, f := range frames {
		b.Audio(f)
		if i == 150 { // 3 s in, still speaking: the first piece is out
			require.Eventually(t, func() bool { return len(stt.got()) == 1 }, 2*time.Second, 5*time.Millisecond)
		}
	}
	require.Eventually(t, func() bool { return len(stt.got()) == 2 }, 2*time.Second, 5*time.Millisecond)
	fs.events <- &realtime.InputAudioBufferSpeechStopped{ItemID: "u1"}
	require.Eventually(t, func() bool { return len(stt.got()) == 3 }, 2*time.Second, 5*time.Millisecond)
	total := 0
	for i, n := range stt.got() {
		require.LessOrEqual(t, n, 2*16000, "piece %d: at most 2 s of 8 kHz PCM16", i)
		total += n
	}
	require.Equal(t, 5*16000, total, "the pieces are the turn")
	require.Eventually(t, func() bool { return len(ph.userLines()) == 3 }, 2*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, b.Close())
	require.Zero(t, rt.sttBounds.backlog.Load())
}

// TestSTTFallbackSharedBounds: the Transcriber calls in progress and the
// audio waiting for them are bounded across all calls of a runtime, not
// per call: with one slot, two calls' turns go one at a time; past the
// backlog a turn is dropped (logged, counted) instead of kept; the
// backlog is given back as turns are sent and when a call ends.
func TestSTTFallbackSharedBounds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m := NewMetrics(reg)
		stt := &blockingSTT{release: make(chan struct{}), rates: make(chan int, 16)}
		fs1, fs2 := newFakeSession(), newFakeSession()
		rt := NewRuntime(nil, RuntimeOptions{Metrics: m, Transcriber: stt, Transcriptions: 1, TranscribeBacklog: 3 * time.Second,
			Engines: map[string]realtime.Engine{agent.EngineUpstream: fakeEngine{fs1}, "upstream-2": fakeEngine{fs2}}})
		type callUnder struct {
			b    *bridge
			fs   *fakeSession
			ph   *notePhone
			done chan error
		}
		ctx, cancel := context.WithCancel(context.Background())
		var calls []callUnder
		for _, c := range []struct {
			engine string
			fs     *fakeSession
		}{{agent.EngineUpstream, fs1}, {"upstream-2", fs2}} {
			ph := &notePhone{}
			b := newBridge(rt, &agent.Config{ID: "ag_" + c.engine, Settings: agent.Settings{Engine: c.engine, Voice: "eve", Model: agent.DefaultModel}}, ph, zerolog.Nop())
			require.NoError(t, b.Prepare(context.Background()))
			cu := callUnder{b: b, fs: c.fs, ph: ph, done: make(chan error, 1)}
			go func() { cu.done <- b.Run(ctx) }()
			calls = append(calls, cu)
		}
		second := make([]byte, 48000) // 1 s at 24 kHz: 8,000 bytes kept
		on := func(cu callUnder) bool {
			cu.b.stt.turns.mu.Lock()
			defer cu.b.stt.turns.mu.Unlock()
			return cu.b.stt.turns.on
		}
		turn := func(cu callUnder, item string) {
			cu.fs.events <- &realtime.InputAudioBufferSpeechStarted{ItemID: item}
			require.Eventually(t, func() bool { return on(cu) }, time.Second, time.Millisecond)
			cu.b.Audio(second)
			cu.fs.events <- &realtime.InputAudioBufferSpeechStopped{ItemID: item}
			require.Eventually(t, func() bool { return !on(cu) }, time.Second, time.Millisecond, "the turn ended")
		}
		turn(calls[0], "a1")
		require.Eventually(t, func() bool { return stt.calls.Load() == 1 }, 2*time.Second, 5*time.Millisecond)
		// One in progress; three seconds may wait (in pieces' arrays: a 1 s
		// turn's array is 8 KB or a little more), the rest is dropped.
		for i := range 3 {
			turn(calls[1], fmt.Sprint("b", i))
		}
		turn(calls[0], "a2")
		require.Eventually(t, func() bool { return dropped(t, reg) == 1 }, 2*time.Second, 5*time.Millisecond, "a2 is past the backlog")
		require.LessOrEqual(t, rt.sttBounds.backlog.Load(), int64(3*8000))
		// Ticks of both bridges pass (synctest's clock): a second
		// Transcriber call would have started by then.
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, 1, stt.calls.Load(), "one Transcriber call at once across the calls")
		close(stt.release)
		lines := func() int { return len(calls[0].ph.userLines()) + len(calls[1].ph.userLines()) }
		require.Eventually(t, func() bool { return lines() == 5-int(dropped(t, reg)) }, 2*time.Second, 5*time.Millisecond)
		require.EqualValues(t, 1, stt.peak.Load())
		require.Zero(t, rt.sttBounds.backlog.Load(), "all sent")

		// A call that ends gives its waiting turns' backlog back.
		stt.release = make(chan struct{})
		turn(calls[0], "a3")
		require.Eventually(t, func() bool { return stt.active.Load() == 1 }, 2*time.Second, 5*time.Millisecond)
		turn(calls[1], "b3")
		require.Eventually(t, func() bool { return rt.sttBounds.backlog.Load() > 0 }, 2*time.Second, 5*time.Millisecond)
		cancel()
		for _, cu := range calls {
			require.NoError(t, <-cu.done)
			require.NoError(t, cu.b.Close())
		}
		require.Zero(t, rt.sttBounds.backlog.Load())
		require.Empty(t, rt.sttBounds.slots, "every slot given back")
	})
}

// dropped reads switchboard_stt_fallback_dropped_total from reg.
func dropped(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "switchboard_stt_fallback_dropped_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
