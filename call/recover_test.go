package call

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/media"
)

// panicAudio panics in Audio (the media goroutine's path into the
// conversation).
type panicAudio struct{ *fakeConv }

func (c panicAudio) Audio([]byte) { panic("conversation bug in Audio") }

// panicPrepare panics while the call rings.
type panicPrepare struct{ *fakeConv }

func (c panicPrepare) Prepare(context.Context) error { panic("conversation bug in Prepare") }

// runConv runs one call on leg with any conversation and returns it once
// finished.
func runConv(t *testing.T, leg *fakeLeg, conv Conversation) *Call {
	t.Helper()
	j := &testJournal{}
	m, err := NewManager(Options{
		Router: routerFunc(func(_ context.Context, p Phone) (Conversation, error) {
			switch c := conv.(type) {
			case *fakeConv:
				c.phone = p
			case panicAudio:
				c.phone = p
			case panicPrepare:
				c.phone = p
			}
			return conv, nil
		}),
		Journal: j,
	}, zerolog.Nop())
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(leg.ctx, leg, zerolog.Nop())
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end after the panic")
	}
	require.NotNil(t, j.ended)
	require.Zero(t, m.Active())
	return j.ended
}

// TestPanicEndsOnlyTheCall: a panic in the conversation's Run (the call's
// own goroutine), in Prepare (ringing) or in Audio (called from the media
// goroutine) is recovered and ends that call only, as the appliance's
// "internal error": BYE once answered, 500 while ringing.
func TestPanicEndsOnlyTheCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Run("run", func(t *testing.T) {
		leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
		conv := &fakeConv{format: media.PCM16(24000), run: func(context.Context, Phone) error { panic("boom") }}
		c := runConv(t, leg, conv)
		require.Equal(t, internalErrorReason, leg.hungUp)
		require.Equal(t, EndedByAppliance, c.Snapshot().EndedBy)
		require.Equal(t, 1, conv.closed)
		require.Equal(t, 1, leg.closeRuns)
	})
	t.Run("prepare", func(t *testing.T) {
		leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
		conv := &fakeConv{format: media.PCM16(24000)}
		c := runConv(t, leg, panicPrepare{conv})
		require.Equal(t, []any{500, "Server Internal Error", time.Duration(0)}, leg.rejected)
		require.Equal(t, EndedByRejected, c.Snapshot().EndedBy)
		require.Equal(t, 1, conv.closed)
	})
	t.Run("audio from the media goroutine", func(t *testing.T) {
		leg := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
		conv := &fakeConv{format: media.PCM16(24000)}
		conv.run = func(ctx context.Context, _ Phone) error {
			leg.send(make([]byte, 160)) // the panic must not come through
			<-ctx.Done()
			return nil
		}
		c := runConv(t, leg, panicAudio{conv})
		leg.mu.Lock()
		defer leg.mu.Unlock()
		require.Equal(t, internalErrorReason, leg.hungUp)
		require.Equal(t, EndedByAppliance, c.Snapshot().EndedBy)
	})
}
