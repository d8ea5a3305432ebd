package transfer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/call"
	"switchboard/transfer"
)

// TestDeclineHumanGone: the human of a warm transfer presses 2 and their
// phone is gone from the network (the BYE is never answered): the caller
// is back with the conversation, and the outcome is reported, at once,
// not when the BYE times out; the human's leg is closed once the BYE is
// done (Wait).
func TestDeclineHumanGone(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller, human := newFakeLeg("caller"), newFakeLeg("human")
	human.byeLost = make(chan struct{})
	s := newService(t, &dialer{next: []*fakeLeg{human}})
	rep := &reporter{}
	cv := &conv{}
	runCallConv(t, caller, cv, func(ctx context.Context, p call.Phone) error {
		stop := make(chan struct{})
		defer close(stop)
		go caller.talk(voicePCM(8), stop)
		tr, err := s.Prepare(ctx, p, transfer.Request{TargetURI: "sip:human@127.0.0.1", Mode: transfer.ModeWarm, Briefing: "A caller needs help."})
		require.NoError(t, err)
		done := make(chan transfer.Result, 1)
		go func() { done <- tr.Run(ctx, rep) }()
		defer tr.Wait()
		defer close(human.byeLost)
		require.Eventually(t, func() bool { return strings.Contains(strings.Join(rep.statuses(), ","), "briefing") },
			3*time.Second, 5*time.Millisecond)
		heard := cv.heardFrames()
		human.key('2')
		select {
		case res := <-done:
			require.Equal(t, transfer.StatusDeclined, res.Status, res.Reason)
		case <-time.After(time.Second):
			require.Fail(t, "the transfer waits for the human's BYE to be answered")
			return call.Hangup("done")
		}
		st := rep.statuses()
		require.Equal(t, "declined", st[len(st)-1])
		require.Eventually(t, func() bool { return cv.heardFrames() > heard }, time.Second, 10*time.Millisecond,
			"the conversation does not hear the caller again")
		hung, closed := human.state()
		require.NotEmpty(t, hung, "the human's leg is being hung up")
		require.Zero(t, closed, "the leg is closed only once its BYE is done")
		return call.Hangup("done")
	})
	_, closed := human.state()
	require.Equal(t, 1, closed)
}
