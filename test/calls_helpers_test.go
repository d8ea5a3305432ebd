package test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
)

// daemonPorts is the RTP range callDaemon gave each daemon.
var daemonPorts sync.Map // *apptest.Daemon -> portRange

// callDaemon starts an in-process appliance with the given extra
// environment and, unless env sets SWITCHBOARD_RTP_PORTS, an RTP range of
// its own: small (20 ports), so that the test can bind all of it after
// the calls to prove every port was returned.
func callDaemon(t *testing.T, env map[string]string) *apptest.Daemon {
	t.Helper()
	var rtp portRange
	all := map[string]string{}
	if _, ok := env["SWITCHBOARD_RTP_PORTS"]; !ok {
		rtp = takePorts(t, 20)
		all["SWITCHBOARD_RTP_PORTS"] = rtp.String()
	}
	for k, v := range env {
		all[k] = v
	}
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), all))
	if rtp.hi > 0 {
		daemonPorts.Store(d, rtp)
		t.Cleanup(func() { daemonPorts.Delete(d) })
	}
	addLineTestNumber(t, d)
	return d
}

// createAgentNumber creates an agent and a BYO-trunk number routed to it,
// with sipAuth (nil: none) as the number's sip_auth.
func createAgentNumber(t *testing.T, d *apptest.Daemon, number string, sipAuth map[string]any) string {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "e2e " + number}, 200)
	body := map[string]any{"origin": "byo_trunk", "name": "e2e " + number, "phone_number": number, "agent_id": ag["agent_id"]}
	if sipAuth != nil {
		body["sip_auth"] = sipAuth
	}
	n := d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, body, 200)
	id, _ := n["id"].(string)
	if id == "" {
		if pn, ok := n["phone_number"].(map[string]any); ok {
			id, _ = pn["id"].(string)
		}
	}
	return id
}

// liveCall waits for the single call of d to be answered and returns it.
// peerLog, when given, is the calling peer's output, shown when no call
// was answered.
func liveCall(t *testing.T, d *apptest.Daemon, peerLog ...func() string) *call.Call {
	t.Helper()
	var c *call.Call
	ok := assert.Eventually(t, func() bool {
		for _, x := range d.App.Calls().List() {
			if x.Snapshot().State == call.StateActive {
				c = x
				return true
			}
		}
		return false
	}, 15*time.Second, 5*time.Millisecond, "no answered call")
	if !ok {
		for _, l := range peerLog {
			t.Logf("the caller's output: %s", l())
		}
		t.Logf("daemon: %s", tail(d.Logs.String(), 3000))
		t.FailNow()
	}
	return c
}

// requireNoCalls waits until the call manager is empty.
func requireNoCalls(t *testing.T, d *apptest.Daemon) {
	t.Helper()
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 15*time.Second, 10*time.Millisecond,
		"calls still live: %d", d.App.Calls().Active())
}

// requirePortsFree binds every port of d's RTP range (callDaemon's),
// proving the appliance released them.
func requirePortsFree(t *testing.T, d *apptest.Daemon) {
	t.Helper()
	r, ok := daemonPorts.Load(d)
	require.True(t, ok, "the daemon's RTP range is not callDaemon's")
	requireRangeFree(t, r.(portRange))
}
