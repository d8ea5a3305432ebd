package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransferControlled: a webhook-routed call (sipp calls, a controller
// attaches) is transferred warm to a sipp human who presses 1: the
// controller gets every step as switchboard.call.transfer (with the
// transfer's id and mode), the number's webhook gets each as a signed
// realtime.call.transfer (the receiver verifies the signature), in order,
// ending bridged. Hanging up through the API ends both legs (sipp, the
// caller and the human, each gets its BYE).
func TestTransferControlled(t *testing.T) {
	t.Parallel()
	const number = "+14155557306"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s"}, h, number)
	hello, _ := calleePcap(t, ttsPCM(t, "Hello?"))
	uri, human := startHuman(t, human{Name: "controlled", RingMs: 200, Hello: hello, Key: "1", KeyAfterMs: 2500})
	dumpOnFail(t, d, human)
	caller := startSipp(t, d, number, sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)

	id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
	c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)

	res := d.JSON(t, "POST", "/v1/calls/"+id+"/transfer", d.OwnerKey, map[string]any{
		"target_uri": uri, "mode": "warm", "briefing": "A caller from the webhook number."}, 202)
	tid := res["transfer_id"].(string)
	require.Equal(t, "warm", res["mode"])
	want := []string{"dialing", "answered", "briefing", "bridged"}
	var got []string
	for len(got) == 0 || got[len(got)-1] != "bridged" {
		ev := c.next(t, "switchboard.call.transfer", 20*time.Second)
		require.Equal(t, tid, ev["transfer_id"], "%v", ev)
		require.Equal(t, "warm", ev["mode"])
		require.Equal(t, uri, ev["target_uri"])
		require.Equal(t, id, ev["call_id"])
		got = append(got, fmt.Sprint(ev["status"]))
	}
	require.Equal(t, want, withoutRinging(got), "controller: %v", got)

	// Webhooks are delivered concurrently: each step once, in any order.
	var hooked []string
	for len(hooked) < len(got) {
		ev := h.next(t, "realtime.call.transfer", 10*time.Second)
		require.Equal(t, tid, ev.Data["transfer_id"])
		require.Equal(t, "warm", ev.Data["mode"])
		require.Equal(t, id, ev.Data["call_id"])
		hooked = append(hooked, fmt.Sprint(ev.Data["status"]))
	}
	require.ElementsMatch(t, got, hooked, "the webhook gets the steps the controller got")

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	caller.wait(t, 10*time.Second)
	human.wait(t, 10*time.Second)
	requireNoCalls(t, d)
	rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
	require.Equal(t, "bridged", recordTransfer(t, rec, tid)["outcome"])
	require.Zero(t, d.App.RTPPortsInUse())
}
