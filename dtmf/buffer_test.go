package dtmf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func key(d byte, at time.Time) Event { return Event{Digit: d, Source: SourceRTP, At: at} }

func TestBufferFlushRules(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	t.Run("hash flushes without the hash", func(t *testing.T) {
		b := NewBuffer(BufferOptions{})
		for i, d := range []byte("1234") {
			_, ok := b.Add(key(d, ms(i*300)))
			require.False(t, ok)
		}
		f, ok := b.Add(key('#', ms(1200)))
		require.True(t, ok)
		require.Equal(t, Flush{Digits: "1234", Reason: FlushHash, At: ms(1200)}, f)
		require.Zero(t, b.Len())
		_, ok = b.Deadline()
		require.False(t, ok)
	})
	t.Run("lone hash", func(t *testing.T) {
		b := NewBuffer(BufferOptions{})
		f, ok := b.Add(key('#', t0))
		require.True(t, ok)
		require.Equal(t, Flush{Reason: FlushHash, At: t0}, f)
	})
	t.Run("idle 2.5 s after the last key", func(t *testing.T) {
		b := NewBuffer(BufferOptions{})
		b.Add(key('1', ms(0)))
		b.Add(key('*', ms(2000)))
		dl, ok := b.Deadline()
		require.True(t, ok)
		require.Equal(t, ms(4500), dl)
		_, ok = b.Tick(ms(4499))
		require.False(t, ok)
		f, ok := b.Tick(ms(4500))
		require.True(t, ok)
		require.Equal(t, Flush{Digits: "1*", Reason: FlushIdle, At: ms(4500)}, f)
		_, ok = b.Tick(ms(9000))
		require.False(t, ok, "empty buffer never flushes")
	})
	t.Run("configurable idle", func(t *testing.T) {
		b := NewBuffer(BufferOptions{IdleTimeout: 5 * time.Second})
		b.Add(key('9', t0))
		_, ok := b.Tick(ms(4999))
		require.False(t, ok)
		_, ok = b.Tick(ms(5000))
		require.True(t, ok)
	})
	t.Run("speech", func(t *testing.T) {
		b := NewBuffer(BufferOptions{})
		_, ok := b.SpeechStarted(t0)
		require.False(t, ok, "empty buffer never flushes")
		b.Add(key('4', t0))
		b.Add(key('2', ms(100)))
		f, ok := b.SpeechStarted(ms(500))
		require.True(t, ok)
		require.Equal(t, Flush{Digits: "42", Reason: FlushSpeech, At: ms(500)}, f)
	})
	t.Run("full", func(t *testing.T) {
		b := NewBuffer(BufferOptions{MaxDigits: 3})
		b.Add(key('1', t0))
		b.Add(key('2', t0))
		f, ok := b.Add(key('3', t0))
		require.True(t, ok)
		require.Equal(t, "123", f.Digits)
		require.Equal(t, FlushFull, f.Reason)
	})
	t.Run("non-keys ignored, a-d normalized", func(t *testing.T) {
		b := NewBuffer(BufferOptions{})
		b.Add(key('x', t0))
		b.Add(key('a', t0))
		f, ok := b.Add(key('#', t0))
		require.True(t, ok)
		require.Equal(t, "A", f.Digits)
	})
}
