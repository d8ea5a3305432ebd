package test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransferReferReplaces: an attended transfer to a PBX that splices
// calls itself. sipp calls an agent (the PBX side of the caller); the
// appliance calls the sipp human (the consultation leg), briefs them,
// they press 1, the caller is bridged to them, then the caller's side
// gets a REFER whose Refer-To names the human with Replaces= the
// consultation dialog (its Call-ID and both tags, RFC 3891); it accepts
// and NOTIFYs 200: the transfer is referred and the appliance's two legs
// end (each sipp gets its BYE).
func TestTransferReferReplaces(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557309")
	hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
	uri, human := startHuman(t, human{Name: "consult", RingMs: 200, Hello: hello, Key: "1", KeyAfterMs: 2500})
	dumpOnFail(t, d, human)
	referTo := regexp.QuoteMeta(uri) + `\?Replaces=[^%]+%3Bto-tag%3D[^%]+%3Bfrom-tag%3D`
	caller := startSipp(t, d, number, sippControl{Mode: "refer", ReferTo: referTo, NotifyStatus: "200 OK", ByeReason: "transferred"}, 1, 1)
	c := liveCall(t, d)
	id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{
		"target_uri": uri, "mode": "refer", "replaces": true, "briefing": "A caller for you."}, 202)["transfer_id"].(string)
	rec := waitRecord(t, d, c.ID(), 30*time.Second, func(r map[string]any) bool {
		tr, _ := r["transfers"].([]any)
		return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
	})
	tr := recordTransfer(t, rec, id)
	require.Equal(t, "referred", tr["outcome"], "steps %v", transferSteps(rec))
	// Bridged to the human once they pressed 1, then the REFER: its
	// acceptance (dialing), then the NOTIFY 200.
	require.Equal(t, []string{"dialing", "answered", "briefing", "dialing", "referred"}, withoutRinging(transferSteps(rec)))
	caller.wait(t, 15*time.Second) // the REFER matched, and the BYE said transferred
	human.wait(t, 15*time.Second)
	requireNoCalls(t, d)
	require.Zero(t, d.App.RTPPortsInUse())
}

// TestTransferAuto: mode auto REFERs first. A caller's side that refuses
// the REFER (501), or accepts it and never NOTIFYs, is bridged to the
// human instead (the record says so); one that completes it is referred.
func TestTransferAuto(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, map[string]string{"SWITCHBOARD_TRANSFER_REFER_NOTIFY_TIMEOUT": "1500ms"})
	number := transferAgent(t, d, "+14155557310")
	for _, tc := range []struct {
		name    string
		refuse  string
		notify  string
		outcome string
		reason  string
	}{
		{"refused", "501 Not Implemented", "", "bridged", "501"},
		{"silent", "", "", "bridged", "no NOTIFY"},
		{"referred", "", "200 OK", "referred", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireNoCalls(t, d)
			// Referred, the caller's side calls the target itself (this
			// one does not): the appliance never calls it.
			uri, desk := "sip:desk@127.0.0.1:5999", (*sippRun)(nil)
			if tc.outcome == "bridged" {
				hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
				uri, desk = startHuman(t, human{Name: "auto" + tc.name, RingMs: 200, Hello: hello})
				dumpOnFail(t, d, desk)
			}
			bye := "hung up by the API"
			if tc.outcome == "referred" {
				bye = "transferred"
			}
			caller := startSipp(t, d, number, sippControl{Mode: "refer", ReferTo: regexp.QuoteMeta(uri), ReferRefuse: tc.refuse,
				NotifyStatus: tc.notify, ByeReason: bye}, 1, 1)
			c := liveCall(t, d)
			id := d.JSON(t, "POST", "/v1/calls/"+c.ID()+"/transfer", d.OwnerKey, map[string]any{"target_uri": uri, "mode": "auto"}, 202)["transfer_id"].(string)
			rec := waitRecord(t, d, c.ID(), 30*time.Second, func(r map[string]any) bool {
				tr, _ := r["transfers"].([]any)
				return len(tr) == 1 && tr[0].(map[string]any)["outcome"] != nil
			})
			tr := recordTransfer(t, rec, id)
			t.Logf("steps %v, reason %v", transferSteps(rec), tr["reason"])
			require.Equal(t, tc.outcome, tr["outcome"])
			if tc.outcome == "bridged" {
				require.Contains(t, strings.ToLower(tr["reason"].(string)), strings.ToLower(tc.reason))
				d.JSON(t, "POST", "/v1/realtime/calls/"+c.ID()+"/hangup", d.OwnerKey, nil, 200)
			}
			caller.wait(t, 15*time.Second)
			if desk != nil {
				desk.wait(t, 15*time.Second)
			}
			requireNoCalls(t, d)
			require.Zero(t, d.App.RTPPortsInUse())
		})
	}
}
