package test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransferTelThroughTrunk: a transfer to tel:+E.164 goes out through
// the outbound trunk of the number the call came in on, and answers the
// trunk's digest challenge with its credentials (sipp, the carrier,
// challenges with 401 and checks the answer with verifyauth). The human
// behind it answers and speaks (a tone): the caller hears it; the human
// hanging up ends the call.
func TestTransferTelThroughTrunk(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	voice, _ := calleePcap(t, silencePCM(300*time.Millisecond), tonePCM(humanTone, 5))
	port, carrier := startCallee(t, callee{Name: "trunk", Challenge: 401, User: "acme-trunk", Password: "trunk-s3cret", RingMs: 200,
		Pcap: voice, CalleeBye: true, TalkMs: 6500})
	dumpOnFail(t, d, carrier)
	const number = "+14155557311"
	outboundNumber(t, d, number, port, "acme-trunk", "trunk-s3cret")
	dir := t.TempDir()
	caller := startBaresip(t, "caller", writeWAV(t, dir, "caller.wav", silencePCM(25*time.Second)),
		"sip:"+number+"@"+d.App.SIPAddr().String(), 40*time.Second)
	c := liveCall(t, d, caller.out.String)
	id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{"target_uri": "tel:+14155550177"}, 202)["transfer_id"].(string)
	rec := waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
		tr, _ := r["transfers"].([]any)
		return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
	})
	tr := recordTransfer(t, rec, id)
	require.Equal(t, "bridged", tr["outcome"], "steps %v, reason %v", transferSteps(rec), tr["reason"])
	require.Equal(t, "bridge", tr["mode"], "the default mode")
	requireNoCalls(t, d) // the human hangs up
	carrier.wait(t, 10*time.Second)
	snap := c.Snapshot()
	require.Contains(t, snap.EndReason, "transfer target hung up")
	ms := c.Snapshot().Media
	t.Logf("caller's RTP: %d in, %d out, %d late (a starved machine skips frames it is too late to send)", ms.PacketsIn, ms.PacketsOut, ms.Late)
	heard := classify(caller.heard(t))
	t.Logf("caller heard: %s", heard)
	// 5 s of the human's tone: most of it heard (a loaded machine's late
	// frame breaks a run now and then).
	require.GreaterOrEqual(t, strings.Count(heard, heardHuman), 30, "the caller never heard the human behind the trunk")
	require.Contains(t, heard, strings.Repeat(heardHuman, 8))
	require.Zero(t, d.App.RTPPortsInUse())
}
