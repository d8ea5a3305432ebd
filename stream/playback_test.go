package stream

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPlaybackAnswersMarksExactly: a mark is answered by the first
// advance at which the audio queued before it has left the queue, not one
// byte earlier; drops and clears pass marks; the kept bytes are what was
// played, never what was dropped.
func TestPlaybackAnswersMarksExactly(t *testing.T) {
	p := newPlayback(8000, true)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	p.queued(ramp(300, 0))
	ready, ok := p.mark("a", 10)
	require.False(t, ready)
	require.True(t, ok)
	p.queued(ramp(100, 50))
	_, ok = p.mark("b", 10)
	require.True(t, ok)
	require.Equal(t, 300*time.Second/8000, p.waiting())

	// 400 queued; the pacer sent 160, then 299, then 300.
	played, names := p.advance(ms(30), nil, nil) // 240 pending
	require.Equal(t, ramp(300, 0)[:160], played)
	require.Empty(t, names)
	played, names = p.advance(400*time.Second/8000-299*time.Second/8000, nil, nil)
	require.Len(t, played, 139)
	require.Empty(t, names, "one byte of a's audio is still queued")
	_, names = p.advance(100*time.Second/8000, nil, nil)
	require.Equal(t, []string{"a"}, names)

	// Drop the 100 queued (a flood's trim): b is passed, nothing played.
	p.dropped(100 * time.Second / 8000)
	played, names = p.advance(0, nil, nil)
	require.Empty(t, played)
	require.Equal(t, []string{"b"}, names)
	require.True(t, p.quiet())

	// Nothing queued: a mark is ready at once.
	ready, _ = p.mark("c", 10)
	require.True(t, ready)

	// clear answers every waiting mark.
	p.queued(ramp(50, 0))
	p.mark("d", 10)
	p.mark("e", 10)
	_, ok = p.mark("f", 2)
	require.False(t, ok, "at most max marks wait")
	require.Equal(t, []string{"d", "e"}, p.cleared(nil))
	require.True(t, p.quiet())
	played, _ = p.advance(0, nil, nil)
	require.Empty(t, played)
}
