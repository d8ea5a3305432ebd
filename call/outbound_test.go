package call

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// TestDialOutcomes: a placed call whose dial failed ends with the outcome
// its error says, in the record and to the conversation.
func TestDialOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err      error
		progress string
		status   int
		by       string
	}{
		{&DialError{Progress: ProgressBusy, SIPStatus: 486, Reason: "Busy Here", ByCallee: true}, ProgressBusy, 486, EndedByCallee},
		{&DialError{Progress: ProgressNoAnswer, SIPStatus: 487, Reason: "no answer within the ring timeout"}, ProgressNoAnswer, 487, EndedByAppliance},
		{&DialError{Progress: ProgressCanceled, SIPStatus: 487, Reason: "canceled while ringing"}, ProgressCanceled, 487, EndedByAppliance},
		{&DialError{Progress: ProgressFailed, SIPStatus: 404, Reason: "Not Found", ByCallee: true}, ProgressFailed, 404, EndedByCallee},
		{errors.New("invite: transaction timed out"), ProgressFailed, 0, EndedByAppliance},
	} {
		t.Run(tc.progress+"/"+tc.err.Error(), func(t *testing.T) {
			leg := newFakeLeg(media.PCMU, Route{})
			leg.md, leg.ansErr = MachineDetectionDetect, tc.err
			conv := &fakeConv{format: media.PCM16(8000)}
			c := runCall(t, leg, conv, nil, Options{})
			s := c.Snapshot()
			require.Equal(t, DirectionOutbound, s.Direction)
			require.Equal(t, tc.progress, s.Progress)
			require.Equal(t, tc.status, s.SIPStatus)
			require.Equal(t, tc.by, s.EndedBy)
			require.True(t, s.Answered.IsZero())
			require.Len(t, conv.progress, 1)
			require.Equal(t, tc.progress, conv.progress[0].Status)
		})
	}
}

func tone(n int, f, a float64) []int16 {
	out := make([]int16, n)
	for i := range out {
		// Several harmonics: speech-like, no pure tone.
		var v float64
		for h := 1.0; h <= 6; h++ {
			v += math.Sin(2*math.Pi*f*h*float64(i)/8000) / h
		}
		out[i] = int16(a * v)
	}
	return out
}

// TestOpeningGatesTheCallee: between the answer and the callee's end of
// greeting the conversation gets none of the callee's audio; then it is
// told who answered, and the audio flows.
func TestOpeningGatesTheCallee(t *testing.T) {
	leg := newFakeLeg(media.PCMU, Route{})
	leg.md = MachineDetectionDetect
	opened := make(chan struct{})
	conv := &fakeConv{format: media.PCM16(8000)}
	conv.run = func(ctx context.Context, p Phone) error {
		leg.sink.Ringing() // after the answer: no second ringing step
		speech := media.PCMU.EncodeFrame(nil, tone(160, 140, 3000))
		silence := media.PCMU.EncodeFrame(nil, make([]int16, 160))
		// 500 ms of "hello", 1.2 s of silence, at the session's frame
		// rate (the detector's clock is the audio's).
		greeting := make([][]byte, 85)
		for i := range greeting {
			greeting[i] = silence
			if i < 25 {
				greeting[i] = speech
			}
		}
		talk(t, leg, greeting)
		require.Eventually(t, func() bool {
			conv.mu.Lock()
			defer conv.mu.Unlock()
			return len(conv.openings) == 1
		}, 2*time.Second, 5*time.Millisecond)
		conv.mu.Lock()
		before := conv.heardAtOpen
		conv.mu.Unlock()
		require.Zero(t, before, "the model heard the callee's greeting")
		leg.send(speech)
		require.Eventually(t, func() bool { return len(conv.heard()) > 0 }, 3*time.Second, 5*time.Millisecond,
			"after the opening the callee is heard")
		close(opened)
		return Hangup("done")
	}
	c := runCall(t, leg, conv, nil, Options{})
	<-opened
	s := c.Snapshot()
	require.Equal(t, ProgressAnswered, s.Progress)
	require.Equal(t, AnsweredByHuman, s.AnsweredBy)
	require.Equal(t, []Opening{{AnsweredBy: AnsweredByHuman, Reason: "short_greeting"}}, conv.openings)
	var statuses []string
	for _, p := range conv.progress {
		statuses = append(statuses, p.Status)
	}
	require.Equal(t, []string{ProgressAnswered, ProgressDetected}, statuses)
}

// TestPlacedCallRefusedBeforeDialing: a placed call whose conversation
// cannot start is never dialed and ends failed.
func TestPlacedCallRefusedBeforeDialing(t *testing.T) {
	leg := newFakeLeg(media.PCMU, Route{})
	leg.md = MachineDetectionOff
	c := runCall(t, leg, nil, &RejectError{Status: 480, Reason: "Temporarily Unavailable", Err: errors.New("no controller")}, Options{})
	s := c.Snapshot()
	require.Equal(t, ProgressFailed, s.Progress)
	require.Equal(t, EndedByRejected, s.EndedBy)
	require.NotContains(t, leg.steps, "answer", "never dialed")
}
