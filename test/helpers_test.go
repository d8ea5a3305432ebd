package test

import (
	"testing"

	"switchboard/app/apptest"
)

// lineTestNumber is routed to an agent with the loopback engine: the
// caller hears their own audio half a second later (the line test).
const lineTestNumber = "+14155550150"

// addLineTestNumber creates the line-test agent and number on d.
func addLineTestNumber(t *testing.T, d *apptest.Daemon) {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "line test", "engine": "loopback"}, 200)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "line test",
		"phone_number": lineTestNumber, "agent_id": ag["agent_id"]}, 200)
}
