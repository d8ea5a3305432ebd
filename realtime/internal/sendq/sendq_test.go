package sendq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOrderAndDropOldestAudio(t *testing.T) {
	q := New[string](2, 4)
	ctx := context.Background()
	require.False(t, q.PushAudio("a1"))
	require.NoError(t, q.Push(ctx, "commit"))
	require.False(t, q.PushAudio("a2"))
	require.True(t, q.PushAudio("a3"), "third audio entry drops the oldest")
	require.Equal(t, []string{"commit", "a2", "a3"}, q.Drain(nil))
	require.Equal(t, uint64(1), q.Dropped())
	require.Equal(t, 0, q.Len())
}

func TestPushWaitsForRoomAndHonoursContext(t *testing.T) {
	q := New[int](1, 1)
	require.NoError(t, q.Push(context.Background(), 1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, q.Push(ctx, 2), context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() { done <- q.Push(context.Background(), 3) }()
	<-q.Ready()
	require.Equal(t, []int{1}, q.Drain(nil))
	require.NoError(t, <-done)
	require.Equal(t, []int{3}, q.Drain(nil))

	q.Close()
	require.ErrorIs(t, q.Push(context.Background(), 4), ErrClosed)
	require.True(t, q.PushAudio(5))
}

func BenchmarkPushAudioDrain(b *testing.B) {
	q := New[[]byte](50, 16)
	frame := make([]byte, 1300)
	var buf [][]byte
	for b.Loop() {
		q.PushAudio(frame)
		buf = q.Drain(buf[:0])
	}
}
