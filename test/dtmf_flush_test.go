package test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
	"switchboard/realtime"
)

// TestDTMFFlushIdleAndSpeech checks the two flushes without #, through
// the daemon's real clock: digits flush after the 2.5 s idle timeout, and
// at once when the model reports that the caller started speaking. (The
// exact timing is tested with an injected clock in package dtmf.)
func TestDTMFFlushIdleAndSpeech(t *testing.T) {
	t.Parallel()
	e := newDTMFEnv(t)
	p := e.dial(t, e.number(t, nil), callerOptions{})
	c := e.accept(t)
	ctx := ctxFor(t, 20*time.Second)

	p.press(t, "42", 80*time.Millisecond, 80*time.Millisecond)
	sent := time.Now()
	require.Equal(t, modelText("42", dtmf.FlushIdle), userText(t, ctx, c))
	idle := time.Since(sent)
	t.Logf("idle flush %v after the last key was sent", idle)
	require.Greater(t, idle, 2*time.Second, "not before the idle timeout (2.5 s from the last key)")
	require.Less(t, idle, 5*time.Second)

	p.press(t, "78", 80*time.Millisecond, 80*time.Millisecond)
	// The keys are in the buffer: the call logs each as it hands it over.
	require.Eventually(t, func() bool { return len(e.keyLogs()) == 4 }, 5*time.Second, 10*time.Millisecond, "%q", e.keyLogs())
	require.NoError(t, c.Send(&realtime.InputAudioBufferSpeechStarted{AudioStartMs: 1000, ItemID: "item_speech"}))
	spoke := time.Now()
	require.Equal(t, modelText("78", dtmf.FlushSpeech), userText(t, ctx, c))
	t.Logf("speech flush %v after speech_started", time.Since(spoke))
	require.Less(t, time.Since(spoke), 1500*time.Millisecond, "flushed by the speech, not by the idle timeout")

	// speech_started with an empty buffer flushes nothing: the next user
	// turn is the # pressed after it.
	require.NoError(t, c.Send(&realtime.InputAudioBufferSpeechStarted{AudioStartMs: 3000, ItemID: "item_speech2"}))
	p.press(t, "#", 80*time.Millisecond, 80*time.Millisecond)
	require.Equal(t, modelText("", dtmf.FlushHash), userText(t, ctx, c))
	require.Len(t, userTexts(c), 3)
	require.Equal(t, []string{"4/rtp", "2/rtp", "7/rtp", "8/rtp", "#/rtp"}, e.keyLogs())
}

// TestDTMFIdleTimeoutSetting: dtmf.idle_timeout is the idle flush's
// time: at 1 s the keys reach the model well before the default 2.5 s
// (counted from the key's start: the press lasts 80 ms and a gap follows).
func TestDTMFIdleTimeoutSetting(t *testing.T) {
	t.Parallel()
	e := newDTMFEnv(t, "SWITCHBOARD_DTMF_IDLE_TIMEOUT=1s")
	p := e.dial(t, e.number(t, nil), callerOptions{})
	c := e.accept(t)
	ctx := ctxFor(t, 20*time.Second)

	p.press(t, "9", 80*time.Millisecond, 80*time.Millisecond)
	sent := time.Now()
	require.Equal(t, modelText("9", dtmf.FlushIdle), userText(t, ctx, c))
	idle := time.Since(sent)
	t.Logf("idle flush %v after the key was sent", idle)
	require.Greater(t, idle, 600*time.Millisecond, "not before the idle timeout")
	require.Less(t, idle, 2*time.Second, "the setting, not the 2.5 s default")
}
