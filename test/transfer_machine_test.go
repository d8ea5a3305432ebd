package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransferVoicemail: the human's phone is answered by a voicemail
// (sipp plays a machine's greeting and its beep): the machine detector on
// the human's leg says so during the briefing, the transfer ends as
// voicemail, the human's leg is hung up, and the caller is back with the
// agent, who says why.
func TestTransferVoicemail(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557312")
	greeting := espeakPCM(t, "Hi, you have reached the voicemail of Alex Morgan at Acme Logistics. I am not able to take your call right now. "+
		"Please leave your name, your number and a short message after the tone, and I will call you back as soon as I can.")
	box, _ := calleePcap(t, silencePCM(200*time.Millisecond), greeting, silencePCM(600*time.Millisecond), beepPCM(500*time.Millisecond))
	uri, machine := startHuman(t, human{Name: "voicemail", RingMs: 300, Hello: box})
	dumpOnFail(t, d, machine)
	caller := startBaresip(t, "caller", writeWAV(t, t.TempDir(), "caller.wav", silencePCM(25*time.Second)),
		"sip:"+number+"@"+d.App.SIPAddr().String(), 40*time.Second)
	c := liveCall(t, d, caller.out.String)
	id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{
		"target_uri": uri, "mode": "warm", "briefing": "A caller about an order."}, 202)["transfer_id"].(string)
	rec := waitRecord(t, d, c.ID(), 30*time.Second, func(r map[string]any) bool {
		tr, _ := r["transfers"].([]any)
		return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
	})
	tr := recordTransfer(t, rec, id)
	require.Equal(t, "voicemail", tr["outcome"], "steps %v, reason %v", transferSteps(rec), tr["reason"])
	t.Logf("voicemail known %v ms after the transfer started: %v", tr["duration_ms"], tr["reason"])
	machine.wait(t, 15*time.Second) // hung up by the appliance
	waitRecord(t, d, c.ID(), 20*time.Second, func(r map[string]any) bool {
		return strings.Contains(fmt.Sprint(r["transcript"]), "voicemail")
	})
	requireNoCalls(t, d) // the caller hangs up when its file ends
	require.Zero(t, d.App.RTPPortsInUse())
}
