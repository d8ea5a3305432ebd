package test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/sip"
	"switchboard/sip/siptest"
)

// TestTransferCallerLeaves: the caller hangs up while the human's phone
// rings: the transfer ends as caller_left, the human's INVITE is
// cancelled (sipp sees the CANCEL and answers 487), and no call, leg or
// port is left.
func TestTransferCallerLeaves(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557313")
	uri, desk := startHuman(t, human{Name: "ringing", NoAnswer: true})
	dumpOnFail(t, d, desk)
	peer := newRTPPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out, err := siptest.NewSoftphone(t).Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: number,
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(peer.port())), Codecs: []sip.Codec{sip.PCMU}})
	require.NoError(t, err)
	c := liveCall(t, d)
	id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{"target_uri": uri, "mode": "warm"}, 202)["transfer_id"].(string)
	waitRecord(t, d, c.ID(), 10*time.Second, func(r map[string]any) bool {
		s := transferSteps(r)
		return len(s) > 0 && s[len(s)-1] == "ringing"
	})
	require.NoError(t, out.Hangup(ctx, "bye"))
	requireNoCalls(t, d)
	desk.wait(t, 10*time.Second) // CANCEL, 487, ACK
	rec := waitRecord(t, d, c.ID(), 10*time.Second, func(r map[string]any) bool {
		tr, _ := r["transfers"].([]any)
		return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
	})
	require.Equal(t, "caller_left", recordTransfer(t, rec, id)["outcome"])
	require.Zero(t, d.App.RTPPortsInUse())
}
