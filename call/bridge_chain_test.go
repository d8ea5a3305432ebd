package call

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/media"
)

// TestBridgeChains: the relay chains of a bridge between two G.711 legs
// (media Listener and Writer String()): two legs of one law relay code
// words, neither decoded nor encoded; a PCMU leg and a PCMA leg
// transcode code words once (a table, in the listener), each way. The
// human's leg is one the appliance placed, as a transfer's is: its
// session starts as PCM at the call's rate (the codec offered first
// until the answer), and the law its answer settles is what the bridge
// relays, both ways.
func TestBridgeChains(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		law                   media.Codec
		toHuman, humanRelay   string
		toCaller, callerRelay string
	}{
		{media.PCMU, "PCMU", "PCMU -> Playout(PCMU)", "PCMU", "PCMU -> Playout(PCMU)"},
		{media.PCMA, "PCMU -> PCMA", "PCMA -> Playout(PCMA)", "PCMA -> PCMU", "PCMU -> Playout(PCMU)"},
	} {
		t.Run("PCMU to "+tc.law.Name, func(t *testing.T) {
			caller := newFakeLeg(media.PCMU, Route{AgentID: "ag_1"})
			other := media.PCMA // offered first, not answered
			if tc.law == media.PCMA {
				other = media.PCMU
			}
			human := newFakeLeg(other, Route{})
			human.answered = tc.law
			human.id = "human-1"
			conv := &fakeConv{format: media.PCM16(24000)}
			conv.run = func(_ context.Context, p Phone) error {
				c := p.(*Call)
				party, err := c.Join(human, InbandOff)
				require.NoError(t, err)
				require.Equal(t, media.PCM16(24000), party.audio.Format(), "before the answer")
				require.NoError(t, human.Answer(context.Background()))
				require.NoError(t, c.Hear(c.Caller(), FromParty(party)))
				require.NoError(t, c.Hear(party, FromParty(c.Caller())))
				c.routes.mu.Lock()
				defer c.routes.mu.Unlock()
				require.Equal(t, tc.toHuman, party.feed.String(), "the caller's voice as the human's leg takes it")
				require.Equal(t, tc.humanRelay, party.relay.String())
				require.Equal(t, tc.toCaller, c.Caller().feed.String(), "the human's voice as the caller's leg takes it")
				require.Equal(t, tc.callerRelay, c.Caller().relay.String())
				return Hangup("done")
			}
			runCall(t, caller, conv, nil, Options{})
		})
	}
}
