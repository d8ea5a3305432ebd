package test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store/pgtest"
)

// TestFleetOutboundLimits: two nodes on one PostgreSQL hold a team to
// outbound.calls_per_second (1) and outbound.max_concurrent (2) together:
// a second call in the same second is refused whichever node takes it, a
// third call in progress is refused on either node, a call that ends
// frees its slot for the other node, and the slots of a node killed with
// its calls free once the fleet finds it lost.
func TestFleetOutboundLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := pgtest.New(t)
	dbURL, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	port, _ := startCallees(t, callee{Name: "fleet-limits", NoAnswer: true}, 6)
	// Node b is killed at the end: its loss is found after killedNodeTimeout.
	env := []string{"SWITCHBOARD_OUTBOUND_MAX_CONCURRENT=2", "SWITCHBOARD_OUTBOUND_CALLS_PER_SECOND=1", killedNodeTimeout}
	a := startFleetNode(t, "node-a", dbURL, freeSIPPort(t), takePorts(t, 20).String(), env...)
	b := startFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 20).String(), env...)
	ag := a.json(t, "POST", "/v1/agents", fleetOwner, map[string]any{"name": "fleet caller"}, 200)
	a.json(t, "POST", "/v2/phone-numbers", fleetOwner, map[string]any{"origin": "byo_trunk", "name": "caller",
		"phone_number": "+18005550160", "agent_id": ag["agent_id"]}, 200)
	body := map[string]any{"to": fmt.Sprintf("sip:callee@127.0.0.1:%d", port), "from": "+18005550160", "agent_id": ag["agent_id"], "ring_timeout_s": 60}
	place := func(n *fleetNode) (int, map[string]any) {
		st, raw := n.do(t, "POST", "/v1/calls", fleetOwner, body)
		return st, map[string]any{"code": errCode(raw), "call_id": jsonField(raw, "call_id"), "raw": string(raw)}
	}
	// Each refusal is a 429 with the limit it hit.
	refused := func(n *fleetNode, code string) {
		t.Helper()
		st, r := place(n)
		require.Equal(t, 429, st, "%s", r["raw"])
		require.Equal(t, code, r["code"], "%s", r["raw"])
	}
	placed := func(n *fleetNode) string {
		t.Helper()
		st, r := place(n)
		require.Equal(t, 201, st, "%s", r["raw"])
		return r["call_id"].(string)
	}
	// The fleet's call rate counts wall-clock seconds across processes:
	// nextSecond places on n until the rate lets a call by (a refusal for
	// the rate takes nothing from it), and returns what the other limits
	// then say.
	nextSecond := func(n *fleetNode) (int, map[string]any) {
		t.Helper()
		var (
			st int
			r  map[string]any
		)
		require.Eventually(t, func() bool {
			st, r = place(n)
			return st != 429 || r["code"] != "rate_limited"
		}, 5*time.Second, 50*time.Millisecond, "the next second's call")
		return st, r
	}
	placedNext := func(n *fleetNode) {
		t.Helper()
		st, r := nextSecond(n)
		require.Equal(t, 201, st, "%s", r["raw"])
	}
	refusedNext := func(n *fleetNode, code string) {
		t.Helper()
		st, r := nextSecond(n)
		require.Equal(t, 429, st, "%s", r["raw"])
		require.Equal(t, code, r["code"], "%s", r["raw"])
	}

	first := placed(a)
	refused(b, "rate_limited") // the same second, on the other node
	placedNext(b)
	refusedNext(a, "too_many_calls") // one call in progress on each node
	refused(b, "too_many_calls")

	// The first call ends (hung up while it rings): its slot is free for
	// the other node.
	a.json(t, "POST", "/v1/realtime/calls/"+first+"/hangup", fleetOwner, map[string]any{}, 200)
	require.Eventually(t, func() bool {
		// A refusal for too many calls takes nothing from the rate.
		st, r := place(b)
		require.Contains(t, []int{201, 429}, st, "%s", r["raw"])
		if st == 429 {
			require.Equal(t, "too_many_calls", r["code"], "%s", r["raw"])
		}
		return st == 201
	}, 10*time.Second, 50*time.Millisecond, "the ended call's slot frees")
	refusedNext(a, "too_many_calls") // both in progress on node b

	// Node b dies with its two calls: once the fleet finds it lost, its
	// slots no longer count.
	killed := time.Now()
	b.signal(syscall.SIGKILL)
	<-b.exited
	require.Eventually(t, func() bool {
		st, r := place(a)
		require.Contains(t, []int{201, 429}, st, "%s", r["raw"])
		if st == 429 {
			require.Equal(t, "too_many_calls", r["code"], "%s", r["raw"])
		}
		return st == 201
	}, 10*time.Second, 100*time.Millisecond, "node b's slots must free once it is found lost")
	t.Logf("a call placed on node-a %v after node-b was killed with its 2 calls (node timeout 3 s)", time.Since(killed).Round(time.Millisecond))
	placedNext(a)
	refusedNext(a, "too_many_calls")
}

// errCode is the code of an error body ("" when none).
func errCode(raw []byte) string {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return ""
	}
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}
