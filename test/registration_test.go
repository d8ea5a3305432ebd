package test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/store/pgtest"
)

// registrationEnv is the timing of the registration tests: quick syncs
// and retries, so that what takes minutes in service takes seconds here.
var registrationEnv = map[string]string{
	"SWITCHBOARD_REGISTRATION_SYNC_INTERVAL": "300ms",
	"SWITCHBOARD_REGISTRATION_LEASE_TTL":     "2s",
	"SWITCHBOARD_REGISTRATION_RETRY_MIN":     "250ms",
	"SWITCHBOARD_REGISTRATION_RETRY_MAX":     "1s",
	"SWITCHBOARD_REGISTRATION_TIMEOUT":       "5s",
	"SWITCHBOARD_REGISTRATION_KEEPALIVE":     "1s",
}

// TestRegistrationThroughKamailio: the appliance registers two numbers at
// Kamailio (registrar, usrloc and auth modules; SHA-256 digest), one over
// UDP and one over TCP; a sipp caller dials each registered user through
// Kamailio and reaches the number's agent. A number whose password is
// wrong is failed with the registrar's 401, retried with backoff, logged
// once. Deleting a number removes its binding; stopping the appliance
// removes the rest: the next call through Kamailio gets 404. The state is
// in GET /v2/phone-numbers/{id}, in /metrics, and in a signed webhook to
// a webhook-routed number.
func TestRegistrationThroughKamailio(t *testing.T) {
	h := newHookReceiver(t, 0) // before the daemon: it outlives the daemon's last webhook
	k := startRegistrar(t, "SHA-256", map[string]string{"alice": "alice-secret-1", "bob": "bob-secret-2", "carol": "carol-secret-3", "dave": "dave-secret-4"})
	env := map[string]string{"SWITCHBOARD_RTP_PORTS": takePorts(t, 20).String()}
	for name, val := range registrationEnv {
		env[name] = val
	}
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), env))
	registrar := "sip:" + k.addr

	// Bad input: the registrar must be a SIP URI.
	st, _, raw := d.Do(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "bad", "phone_number": "+14155550190",
		"registration": map[string]any{"registrar": "http://" + k.addr, "username": "alice"}})
	require.Equal(t, 400, st, "%s", raw)
	_, param, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "registration.registrar", param)

	// A webhook number, its secret known before it registers.
	hookNum := d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "hooked",
		"phone_number": "+14155550194", "webhook": map[string]any{"url": h.srv.URL + "/hook"}}, 200)
	h.secret.Store(hookNum["webhook"].(map[string]any)["dispatch_signing_secret"].(string))
	hookID := hookNum["phone_number"].(map[string]any)["phone_number_id"].(string)

	alice := agentNumber(t, d, "+14155550191")
	bob := agentNumber(t, d, "+14155550192")
	carol := agentNumber(t, d, "+14155550193")
	asked := time.Now()
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+alice, d.OwnerKey, map[string]any{"registration": map[string]any{
		"registrar": registrar, "username": "alice", "password": "alice-secret-1", "contact_user": "sb-alice", "expires_s": 60}}, 200)
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+bob, d.OwnerKey, map[string]any{"registration": map[string]any{
		"registrar": registrar, "username": "bob", "password": "bob-secret-2", "transport": "tcp"}}, 200)
	failedAt := time.Now()
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+carol, d.OwnerKey, map[string]any{"registration": map[string]any{
		"registrar": registrar, "username": "carol", "password": "not-carols-password"}}, 200)
	d.JSON(t, "PATCH", "/v2/phone-numbers/"+hookID, d.OwnerKey, map[string]any{"registration": map[string]any{
		"registrar": registrar, "username": "dave", "password": "dave-secret-4"}}, 200)

	reg := registrationOf(t, d, alice, 10*time.Second, stateIs("registered"))
	t.Logf("alice registered %v after the PATCH (challenge and answer, SHA-256)", time.Since(asked).Round(time.Millisecond))
	require.Equal(t, float64(200), reg["last_status"])
	exp, err := time.Parse(time.RFC3339, reg["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(60*time.Second), exp, 5*time.Second, "the registrar's grant")
	require.NotContains(t, fmt.Sprint(reg), "alice-secret-1")
	registrationOf(t, d, bob, 10*time.Second, stateIs("registered"))
	require.Contains(t, k.out.String(), "registrar: saved bob contact <sip:bob@127.0.0.1:", "bob's contact is registered")
	require.Contains(t, k.out.String(), "transport=tcp>", "over TCP")
	require.Eventually(t, func() bool { return strings.Contains(k.out.String(), "registrar: OPTIONS from bob over tcp") },
		5*time.Second, 50*time.Millisecond, "the TCP registration's keep-alive is an OPTIONS on its connection")

	ev := h.next(t, "phone_number.registration", 10*time.Second)
	require.Equal(t, hookID, ev.Data["phone_number_id"])
	require.Equal(t, "+14155550194", ev.Data["phone_number"])
	require.Equal(t, "registered", ev.Data["registration"].(map[string]any)["state"])

	// Calls for the registered users, through Kamailio, reach the agents.
	proxyCall(t, k.addr, "alice", 1500).requireOK(t)
	proxyCall(t, k.addr, "bob", 1500).requireOK(t)
	require.Contains(t, k.out.String(), "registrar: alice reached at sip:sb-alice@127.0.0.1:")
	recs := d.JSON(t, "GET", "/v1/calls?page_size=100", d.OwnerKey, nil, 200)["calls"].([]any)
	answered := map[string]bool{}
	for _, r := range recs {
		m := r.(map[string]any)
		if m["answered_at"] != nil {
			answered[m["phone_number"].(string)] = true
		}
	}
	require.True(t, answered["+14155550191"] && answered["+14155550192"], "both numbers' agents answered: %v", recs)

	// The wrong password: failed with the 401, retried with backoff, one
	// log line.
	reg = registrationOf(t, d, carol, 10*time.Second, stateIs("failed"))
	require.Equal(t, float64(401), reg["last_status"])
	require.Contains(t, reg["last_error"], "credentials refused")
	// The registration's backoff runs on the daemon's real clock (registration/manager_test.go runs it on synctest's).
	time.Sleep(time.Until(failedAt.Add(4 * time.Second)))
	text := scrapeMetrics(t, d.URL)
	tries := metricValue(t, text, `switchboard_sip_register_total{status="401"}`)
	// 250 ms doubling to 1 s: tries at about 0, 0.25, 0.75, 1.75, 2.75
	// and 3.75 s (each an exchange: a REGISTER, its 401, the answer and
	// the 401 again); without backoff, hundreds.
	t.Logf("carol's wrong password: %.0f REGISTER exchanges answered 401 in the first 4 s (retry_min 250 ms, retry_max 1 s)", tries)
	require.LessOrEqual(t, tries, 8.0, "carol's REGISTERs back off")
	require.GreaterOrEqual(t, tries, 3.0, "and go on")
	require.Equal(t, 1, strings.Count(d.Logs.String(), `"registration: failed; retrying with backoff`), "one log line for the failure, however many retries")
	require.Equal(t, 3.0, metricValue(t, text, `switchboard_sip_registrations{state="registered"}`))
	require.Equal(t, 1.0, metricValue(t, text, `switchboard_sip_registrations{state="failed"}`))

	// Deleting bob's number removes his binding.
	d.JSON(t, "DELETE", "/v2/phone-numbers/"+bob, d.OwnerKey, nil, 200)
	require.Eventually(t, func() bool {
		return runSipp(t, netipAddrPort(t, k.addr), render(t, "call.xml.tmpl", pcmaCall("bob_gone", 404)), "bob").err == nil
	}, 10*time.Second, 200*time.Millisecond, "a call for bob gets 404 once his number is deleted")

	// Stopping the appliance unregisters alice: the next call gets 404.
	d.Stop(t)
	runSipp(t, netipAddrPort(t, k.addr), render(t, "call.xml.tmpl", pcmaCall("alice_gone", 404)), "alice").requireOK(t)
	require.Contains(t, k.out.String(), "registrar: no contact for alice")
	off := h.next(t, "phone_number.registration", 10*time.Second)
	require.Equal(t, "off", off.Data["registration"].(map[string]any)["state"], "the webhook hears the unregister")
}

// TestFleetRegistrationTakeover: two nodes on one PostgreSQL; one of them
// holds a number's registration at Kamailio (MD5 digest) and takes the
// calls for it; killed (SIGKILL: no unregister), the other node takes the
// registration over once the lease ran out, and the next call through
// Kamailio reaches it.
func TestFleetRegistrationTakeover(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.New(t)
	dbURL, err := pg.CreateDatabase(ctx, "fleet")
	require.NoError(t, err)
	k := startRegistrar(t, "MD5", map[string]string{"erin": "erin-secret-5"})
	env := []string{"SWITCHBOARD_REGISTRATION_SYNC_INTERVAL=300ms", "SWITCHBOARD_REGISTRATION_LEASE_TTL=2s",
		"SWITCHBOARD_REGISTRATION_RETRY_MIN=250ms", "SWITCHBOARD_REGISTRATION_RETRY_MAX=1s"}
	nodes := map[string]*fleetNode{
		"node-a": startFleetNode(t, "node-a", dbURL, freeSIPPort(t), takePorts(t, 20).String(), env...),
		"node-b": startFleetNode(t, "node-b", dbURL, freeSIPPort(t), takePorts(t, 20).String(), env...),
	}
	a := nodes["node-a"]
	ag := a.json(t, "POST", "/v1/agents", fleetOwner, map[string]any{"name": "fleet registered"}, 200)
	n := a.json(t, "POST", "/v2/phone-numbers", fleetOwner, map[string]any{"origin": "byo_trunk", "name": "erin",
		"phone_number": "+14155550195", "agent_id": ag["agent_id"],
		"registration": map[string]any{"registrar": "sip:" + k.addr, "username": "erin", "password": "erin-secret-5", "expires_s": 60}}, 200)
	id := n["phone_number"].(map[string]any)["phone_number_id"].(string)

	registered := func(on *fleetNode, not string) map[string]any {
		var reg map[string]any
		require.Eventually(t, func() bool {
			reg, _ = on.json(t, "GET", "/v2/phone-numbers/"+id, fleetOwner, nil, 200)["registration"].(map[string]any)
			return reg["state"] == "registered" && reg["node_id"] != not
		}, 15*time.Second, 50*time.Millisecond, "registration: %v", reg)
		return reg
	}
	reg := registered(a, "")
	holder, other := nodes[reg["node_id"].(string)], nodes["node-a"]
	if holder == other {
		other = nodes["node-b"]
	}
	require.Equal(t, reg, registered(other, ""), "every node reads the holder's state")
	proxyCall(t, k.addr, "erin", 1000).requireOK(t)
	answeredOn := func() map[string]int {
		return byNode(other.calls(t), func(r map[string]any) bool { return r["answered_at"] != nil })
	}
	require.Equal(t, map[string]int{holder.id: 1}, answeredOn(), "the holder takes the call")

	killed := time.Now()
	holder.signal(syscall.SIGKILL)
	<-holder.exited
	reg = registered(other, holder.id)
	require.Equal(t, other.id, reg["node_id"])
	took := time.Since(killed)
	t.Logf("registration taken over by %s %v after %s was killed (lease 2 s, sync 300 ms)", other.id, took.Round(time.Millisecond), holder.id)
	require.Less(t, took, 5*time.Second)
	proxyCall(t, k.addr, "erin", 1000).requireOK(t)
	require.Equal(t, 1, answeredOn()[other.id], "the next call reaches the node that took the registration over")
}
