package call

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/media"
)

// TestPeerHoldInBridge: in a bridge, the caller's phone holds the call
// (its leg reports PeerHolding): the observer set with OnPeerHold hears
// it and routes the human to a loop; when the phone takes the call off
// hold, the human hears the caller's code words again, relayed as before
// the hold. Each hold of a phone, the caller's or the human's, is noted
// for the call record with who held.
func TestPeerHoldInBridge(t *testing.T) {
	defer goleak.VerifyNone(t)
	caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
	human := newFakeLeg(media.PCMU, Route{})
	human.id = "human-1"
	conv := &fakeConv{format: media.PCM16(24000)}
	conv.run = func(_ context.Context, p Phone) error {
		c := p.(*Call)
		party, err := c.Join(human, InbandOff)
		require.NoError(t, err)
		require.NoError(t, c.Hear(c.Caller(), FromParty(party)))
		require.NoError(t, c.Hear(party, FromParty(c.Caller())))
		require.NoError(t, c.ConversationHears(nil))
		music := sine(440, 8000, 800)
		loop, err := media.NewLoop(music, 8000)
		require.NoError(t, err)
		var told []bool
		c.Caller().OnPeerHold(func(holding bool) {
			told = append(told, holding)
			src := FromParty(c.Caller())
			if holding {
				src = FromLoop(loop)
			}
			require.NoError(t, c.Hear(party, src))
		})

		before := codeFrames(5, 1)
		talk(t, caller, before)
		human.heard(t, bytes.Join(before, nil))

		caller.sink.PeerHolding(true)
		require.True(t, c.Caller().PeerHolding())
		human.heard(t, media.PCMU.EncodeFrame(nil, music)[:320])

		caller.sink.PeerHolding(false)
		require.False(t, c.Caller().PeerHolding())
		// The caller's jitter buffer starts again after the pause of
		// this test's stream (a real phone keeps sending while it
		// holds): its first frames go to that.
		after := codeFrames(10, 2)
		talk(t, caller, after)
		human.heard(t, bytes.Join(after[4:8], nil))
		require.Equal(t, []bool{true, false}, told)

		// The human's phone holds too: the record notes each hold, who
		// held (the caller, the human) and when.
		human.sink.PeerHolding(true)
		human.sink.PeerHolding(false)
		var holds []string
		for _, n := range c.Snapshot().Notes {
			if n.Kind == NoteHold {
				d := n.Data.(map[string]any)
				require.False(t, n.At.IsZero())
				holds = append(holds, fmt.Sprintf("%s %s %s", d["by"], n.Text, d["party_id"]))
			}
		}
		require.Equal(t, []string{"caller held call-1", "caller resumed call-1", "human held human-1", "human resumed human-1"}, holds)
		return Hangup("done")
	}
	runCall(t, caller, conv, nil, Options{})
}
