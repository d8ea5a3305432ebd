package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store/pgtest"
)

// fleetSipp places calls calls through target with the fleet scenario: each
// call lasts holdMs unless the appliance hangs it up first. It returns
// sipp's error (nil: every call passed) and output when it is done.
func fleetSipp(t *testing.T, target string, calls, holdMs int, from string) <-chan sippResult {
	t.Helper()
	_, err := exec.LookPath("sipp")
	require.NoError(t, err, "sipp must be installed (apt install sip-tester)")
	file := render(t, "fleet.xml.tmpl", struct {
		HoldMs int
		From   string
	}{holdMs, from})
	tmp := t.TempDir()
	args := []string{target, "-sf", file, "-s", demoNumber, "-m", fmt.Sprint(calls), "-l", fmt.Sprint(calls),
		"-r", "20", "-rp", "1000", "-i", "127.0.0.1", "-p", fmt.Sprint(freeUDPPort(t)), "-mp", fmt.Sprint(freeUDPPort(t)),
		"-t", "u1", "-timeout", "90s", "-timeout_error", "-nostdin", "-trace_err", "-error_file", filepath.Join(tmp, "err.log")}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	cmd := exec.CommandContext(ctx, "sipp", args...)
	cmd.Dir = tmp
	done := make(chan sippResult, 1)
	go func() {
		defer cancel()
		out, err := cmd.CombinedOutput()
		done <- sippResult{out: string(out), err: err}
	}()
	t.Cleanup(cancel)
	return done
}

func waitSipp(t *testing.T, c <-chan sippResult, within time.Duration) sippResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(within):
		t.Fatal("sipp did not finish in time")
	}
	return sippResult{}
}

// byNode counts records per node id among those that match keep.
func byNode(recs []map[string]any, keep func(map[string]any) bool) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		if keep(r) {
			out[r["node_id"].(string)]++
		}
	}
	return out
}

func state(s string) func(map[string]any) bool {
	return func(r map[string]any) bool { return r["state"] == s }
}

// TestFleetBehindKamailio runs the fleet of deploy/: PostgreSQL and
// Kamailio from their Debian packages on loopback, two appliance nodes on
// the shared database. sipp calls through Kamailio land on both nodes; a
// call on one node is hung up through the other's API; a key revoked on one
// node is refused on the other within a second; one node drains on SIGTERM
// while its calls finish and new calls go to the survivor; and every call
// has its record, closed, naming its node.
func TestFleetBehindKamailio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := pgtest.New(t)
	dbURL, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	kport := freeUDPPort(t)
	entry := fmt.Sprintf("SWITCHBOARD_CLUSTER_SIP_HOST=127.0.0.1:%d", kport)
	a := startFleetNode(t, "node-a", dbURL, freeSIPPort(t), takePorts(t, 100).String(), "SWITCHBOARD_DRAIN_TIMEOUT=40s", entry)
	b := startFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 100).String(), "SWITCHBOARD_DRAIN_TIMEOUT=40s", entry)
	k := startKamailio(t, kport, a.sip, b.sip)
	nums := b.json(t, "GET", "/v2/phone-numbers", fleetOwner, nil, 200)["phone_numbers"].([]any)
	require.Equal(t, k.addr, nums[0].(map[string]any)["sip_host"], "numbers point callers at Kamailio, not at a node")

	nodes := a.json(t, "GET", "/v1/cluster/nodes", fleetOwner, nil, 200)["nodes"].([]any)
	require.Len(t, nodes, 2)
	for _, n := range nodes {
		require.Equal(t, true, n.(map[string]any)["live"], "%v", n)
	}

	// A key made on one node works on the other; revoked on one, it is
	// refused on the other within a second.
	key := a.json(t, "POST", "/auth/teams/default/api-keys", fleetOwner,
		map[string]any{"name": "fleet", "acls": []string{"api-key:endpoint:*"}}, 200)
	secret, keyID := key["apiKey"].(string), key["apiKeyId"].(string)
	b.json(t, "GET", "/v1/api-key", secret, nil, 200)
	prop := a.json(t, "GET", "/auth/api-keys/"+keyID+"/propagation", fleetOwner, nil, 200)
	require.Equal(t, map[string]any{"node-a": true, "node-b": true}, prop["icPropagation"])
	// Rotated on node b: the new secret works on node a at once, and both
	// nodes report the rotated key within a second.
	rotated := b.json(t, "POST", "/auth/api-keys/"+keyID+"/rotate", fleetOwner, map[string]any{}, 200)
	newSecret := rotated["apiKey"].(string)
	require.NotEqual(t, secret, newSecret)
	a.json(t, "GET", "/v1/api-key", newSecret, nil, 200)
	require.Eventually(t, func() bool {
		p := b.json(t, "GET", "/auth/api-keys/"+keyID+"/propagation", fleetOwner, nil, 200)["icPropagation"]
		return fmt.Sprint(p) == "map[node-a:true node-b:true]"
	}, time.Second, 20*time.Millisecond, "both nodes must report the rotation within a second")
	secret = newSecret
	b.json(t, "GET", "/v1/api-key", secret, nil, 200) // node b now holds the key in its cache
	a.json(t, "DELETE", "/auth/api-keys/"+keyID, fleetOwner, nil, 200)
	revoked := time.Now()
	require.Eventually(t, func() bool { st, _ := b.do(t, "GET", "/v1/api-key", secret, nil); return st == 401 },
		time.Second, 10*time.Millisecond, "a key revoked on node a must be refused on node b within a second")
	t.Logf("key revoked on node-a refused on node-b after %v", time.Since(revoked).Round(time.Millisecond))

	// Four calls through Kamailio: round-robin puts two on each node.
	first := fleetSipp(t, k.addr, 4, 12000, "1000")
	var recs []map[string]any
	require.Eventually(t, func() bool {
		recs = a.calls(t)
		return len(recs) == 4 && byNode(recs, state("active"))["node-a"] == 2 && byNode(recs, state("active"))["node-b"] == 2
	}, 15*time.Second, 50*time.Millisecond, "want 2 active calls on each node, got %v", recs)

	// Hang up one of node b's calls through node a's API.
	var onB string
	for _, r := range recs {
		if r["node_id"] == "node-b" {
			onB = r["call_id"].(string)
			break
		}
	}
	a.json(t, "POST", "/v1/realtime/calls/"+onB+"/hangup", fleetOwner, map[string]any{}, 200)
	require.Eventually(t, func() bool {
		st, raw := a.do(t, "GET", "/v1/calls/"+onB, fleetOwner, nil)
		return st == 200 && jsonField(raw, "state") == "ended"
	}, 5*time.Second, 50*time.Millisecond)
	st, _ := a.do(t, "POST", "/v1/realtime/calls/no-such-call/hangup", fleetOwner, map[string]any{})
	require.Equal(t, 404, st, "an unknown call is not forwarded anywhere")

	// Drain node a: it answers Kamailio's probes with 503, its two calls go
	// on, and new calls go to node b.
	drainStart := time.Now()
	a.signal(syscall.SIGTERM)
	require.Eventually(t, func() bool {
		for _, n := range b.json(t, "GET", "/v1/cluster/nodes", fleetOwner, nil, 200)["nodes"].([]any) {
			if m := n.(map[string]any); m["node_id"] == "node-a" {
				return m["state"] == "draining"
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "node a must say it is draining")
	require.Eventually(t, func() bool { return strings.Contains(k.out.String(), "node sip:"+a.sip+" left the rotation") },
		3*time.Second, 20*time.Millisecond, "Kamailio's OPTIONS probe must take the draining node out of the rotation")
	second := waitSipp(t, fleetSipp(t, k.addr, 3, 1500, "2000"), 30*time.Second)
	second.requireOK(t)
	select {
	case <-a.exited:
		t.Fatal("node a stopped before its calls ended")
	default:
	}
	waitSipp(t, first, 30*time.Second).requireOK(t)
	select {
	case <-a.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("node a did not stop once its calls had ended")
	}
	a.mu.Lock()
	drained := a.exitTime.Sub(drainStart)
	a.mu.Unlock()
	require.Less(t, drained, 40*time.Second, "node a stopped within its drain window")
	t.Logf("node-a drained in %v", drained.Round(time.Millisecond))

	// Every call has its record, closed, on the node that held it.
	recs = b.calls(t)
	require.Len(t, recs, 7, "no call record lost: %v", recs)
	require.Equal(t, map[string]int{"node-a": 2, "node-b": 5}, byNode(recs, state("ended")), "%v", recs)
	for _, r := range recs {
		switch {
		case r["call_id"] == onB:
			require.Equal(t, "appliance", r["ended_by"], "%v", r)
		default:
			require.Equal(t, "caller", r["ended_by"], "the caller hung up every other call: %v", r)
		}
		if r["from"] == "+15550002000" {
			require.Equal(t, "node-b", r["node_id"], "a call placed while node a drained went to node b: %v", r)
		}
	}
}

// TestFleetKilledNode: two nodes start together on an empty database; a
// node killed outright (SIGKILL: no drain, no last
// write) stops beating; another node declares it lost after the node
// timeout and marks its open calls ended, at the last time each was known
// to be up.
// killedNodeTimeout is the node timeout of the tests that kill a node: they
// wait for the survivor to find the loss, so 3 s (12 heartbeats) rather
// than the fleet tests' 10 s, still clear of a heartbeat late under load.
const killedNodeTimeout = "SWITCHBOARD_CLUSTER_NODE_TIMEOUT=3s"

func TestFleetKilledNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := pgtest.New(t)
	dbURL, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	// Both start at once on the empty database: one applies the
	// migrations, creates the owner key and seeds the demo number, and the
	// other finds them done.
	a := launchFleetNode(t, "node-a", dbURL, freeSIPPort(t), takePorts(t, 100).String(), killedNodeTimeout)
	b := launchFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 100).String(), killedNodeTimeout)
	a.waitServing(t)
	b.waitServing(t)
	// A second process with a running node's id refuses to start: it would
	// close that node's call records as its own.
	dup := launchFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 40).String())
	select {
	case <-dup.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("a node with a duplicate id started")
	}
	require.Contains(t, dup.log(), "node id in use")

	call := fleetSipp(t, b.sip, 1, 60000, "3000")
	var recs []map[string]any
	require.Eventually(t, func() bool {
		recs = a.calls(t)
		return byNode(recs, state("active"))["node-b"] == 1
	}, 15*time.Second, 50*time.Millisecond, "want a call active on node b: %v", recs)

	killed := time.Now()
	b.signal(syscall.SIGKILL)
	<-b.exited
	require.Eventually(t, func() bool {
		recs = a.calls(t)
		return len(recs) == 1 && recs[0]["state"] == "ended"
	}, 10*time.Second, 50*time.Millisecond, "node a must close the killed node's call: %v", recs)
	t.Logf("killed node's call closed by node-a %v after the kill (node timeout 1.5 s)", time.Since(killed).Round(time.Millisecond))
	require.Equal(t, "node_lost", recs[0]["ended_by"])
	require.Equal(t, "node-b", recs[0]["node_id"])
	require.NotNil(t, recs[0]["ended_at"])
	nodes := a.json(t, "GET", "/v1/cluster/nodes", fleetOwner, nil, 200)["nodes"].([]any)
	require.Equal(t, "lost", nodes[1].(map[string]any)["state"])
	select {
	case r := <-call:
		require.Error(t, r.err, "the caller's call was cut")
	default:
	}
}

// TestFleetControllerOnOtherNode: a webhook-routed call lands on node b;
// its controller connects to node a's /v1/realtime?call_id= and steers the
// call through node a (DTMF, hangup), all forwarded to node b; so is an
// accept sent to node a for a second call.
func TestFleetControllerOnOtherNode(t *testing.T) {
	t.Parallel()
	const number = "+14155550177"
	ctx := context.Background()
	pg := pgtest.New(t)
	dbURL, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	a := startFleetNode(t, "node-a", dbURL, freeSIPPort(t), takePorts(t, 50).String())
	b := startFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 50).String())
	h := newHookReceiver(t, 0)
	created := a.json(t, "POST", "/v2/phone-numbers", fleetOwner, map[string]any{
		"origin": "byo_trunk", "name": "hook", "phone_number": number, "webhook": map[string]any{"url": h.srv.URL + "/hook"},
		"recording": map[string]any{"enabled": true},
	}, 200)
	h.secret.Store(created["webhook"].(map[string]any)["dispatch_signing_secret"].(string))

	run := startSippAt(t, b.sip, number, sippControl{ByeReason: "hung up by the API"}, 1, 1)
	id := h.next(t, "realtime.call.incoming", 10*time.Second).Data["call_id"].(string)
	c, status, body := dialController(t, "ws"+a.url[len("http"):]+"/v1/realtime?call_id="+id, bearer(fleetOwner))
	require.Equal(t, 101, status, "the controller's socket on node a reaches the call on node b: %s", body)
	c.nextWhere(t, "switchboard.call.state", "state", "active", 10*time.Second)
	require.Equal(t, "node-b", liveStreamNode(t, a, id), "node a's live stream carries node b's call")
	live := a.json(t, "GET", "/v1/calls/"+id, fleetOwner, nil, 200)
	require.Equal(t, "active", live["state"], "node a serves node b's live view of its call")
	require.Equal(t, "node-b", live["node_id"])
	a.json(t, "POST", "/v1/realtime/calls/"+id+"/dtmf", fleetOwner, map[string]any{"digits": "12#"}, 200)
	a.json(t, "POST", "/v1/realtime/calls/"+id+"/hangup", fleetOwner, map[string]any{}, 200)
	ce := c.waitClosed(t, 5*time.Second)
	require.NotNil(t, ce)
	require.Contains(t, ce.Text, "hung up by the API")
	run.wait(t, 10*time.Second)
	end := h.next(t, "realtime.call.ended", 5*time.Second)
	require.Equal(t, id, end.Data["call_id"])
	rec := a.json(t, "GET", "/v1/calls/"+id, fleetOwner, nil, 200)
	require.Equal(t, "node-b", rec["node_id"])
	require.Equal(t, "ended", rec["state"])
	// The recording is a file on node b's disk; node a fetches it from there.
	var wav []byte
	require.Eventually(t, func() bool {
		var st int
		st, wav = a.do(t, "GET", "/v1/calls/"+id+"/recording", fleetOwner, nil)
		return st == 200
	}, 5*time.Second, 50*time.Millisecond, "the recording of node b's call through node a: %s", wav)
	require.Equal(t, "RIFF", string(wav[:4]))
	rec = a.json(t, "GET", "/v1/calls/"+id, fleetOwner, nil, 200)
	require.NotNil(t, rec["recording"], "node a shows node b's record with its recording: %v", rec)

	// The hosted flow's accept, sent to node a, answers a call node b
	// holds; a second accept is 409 there too.
	run = startSippAt(t, b.sip, number, sippControl{ByeReason: "hung up by the API"}, 1, 1)
	id = h.next(t, "realtime.call.incoming", 10*time.Second).Data["call_id"].(string)
	a.json(t, "POST", "/v1/realtime/calls/"+id+"/accept", fleetOwner, map[string]any{"type": "realtime", "instructions": "accepted on a"}, 200)
	a.json(t, "POST", "/v1/realtime/calls/"+id+"/accept", fleetOwner, map[string]any{"type": "realtime"}, 409)
	require.Eventually(t, func() bool {
		return a.json(t, "GET", "/v1/calls/"+id, fleetOwner, nil, 200)["state"] == "active"
	}, 10*time.Second, 50*time.Millisecond, "answered by the accept alone")
	a.json(t, "POST", "/v1/realtime/calls/"+id+"/hangup", fleetOwner, map[string]any{}, 200)
	run.wait(t, 10*time.Second)
}

// TestFleetFailover: a node at its max_calls refuses a call with 503 (its
// OPTIONS still say 200), and Kamailio's failure route gives the call to
// the next node: every call is answered, none by the full node twice.
func TestFleetFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := pgtest.New(t)
	dbURL, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	a := startFleetNode(t, "node-a", dbURL, freeSIPPort(t), takePorts(t, 50).String(), "SWITCHBOARD_MAX_CALLS=1")
	b := startFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 50).String())
	k := startKamailio(t, freeUDPPort(t), a.sip, b.sip)
	waitSipp(t, fleetSipp(t, k.addr, 4, 4000, "4000"), 40*time.Second).requireOK(t)
	recs := b.calls(t)
	require.Equal(t, map[string]int{"node-a": 1, "node-b": 3}, byNode(recs, func(r map[string]any) bool { return r["answered_at"] != nil }),
		"node a takes one call, node b the rest: %v", recs)
	require.Contains(t, k.out.String(), "trying the next", "Kamailio failed a call over from the full node")
}

// liveStreamNode reads node n's live stream (GET /v1/calls/live) until an
// event carries call id, and returns the node_id it names.
func liveStreamNode(t *testing.T, n *fleetNode, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", n.url+"/v1/calls/live", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+fleetOwner)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Calls []map[string]any `json:"calls"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		for _, c := range ev.Calls {
			if c["call_id"] == id {
				return c["node_id"].(string)
			}
		}
	}
	t.Fatalf("the live stream of %s never carried call %s: %v", n.id, id, sc.Err())
	return ""
}
