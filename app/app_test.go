package app_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/app"
	"switchboard/app/apptest"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

// TestWiring: an appliance built from the defaults serves every route it
// lists (none answers the catch-all 404), seeds the demo number routed to
// the demo agent, and answers a call to that number end to end with its
// greeting (the wiring of numbers, the route carried with the call, the
// router, the agent runtime and the echo engine).
func TestWiring(t *testing.T) {
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), nil))

	paths := map[string]bool{}
	for _, rt := range d.App.Routes() {
		paths[rt.Method+" "+rt.Pattern] = true
	}
	for _, want := range []string{"GET /healthz", "GET /readyz", "GET /v1/calls", "GET /v1/realtime", "POST /v1/agents",
		"POST /v2/phone-numbers", "POST /v1/realtime/calls/{call_id}/refer"} {
		require.True(t, paths[want], want)
	}
	for _, rt := range d.App.Routes() {
		if rt.Method != http.MethodGet || containsWildcard(rt.Pattern) || rt.Pattern == "/v1/realtime" || rt.Pattern == "/v1/calls/live" { // a socket and a stream: they do not end
			continue
		}
		status, _, raw := d.Do(t, http.MethodGet, rt.Pattern, d.OwnerKey, nil)
		require.NotEqual(t, http.StatusNotFound, status, "%s: %s", rt.Pattern, raw)
	}

	nums := d.JSON(t, "GET", "/v2/phone-numbers", d.OwnerKey, nil, 200)
	list := nums["phone_numbers"].([]any)
	require.Len(t, list, 1)
	demo := list[0].(map[string]any)
	require.Equal(t, "+18005550100", demo["phone_number"])
	ag := d.JSON(t, "GET", "/v1/agents/"+demo["agent_id"].(string), d.OwnerKey, nil, 200)
	require.Equal(t, app.DemoAgentName, ag["name"])

	dl := siptest.NewSoftphone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dl.Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: "+18005550100", From: "wiring",
		RTPAddr: loopbackRTP(t), Codecs: []sip.Codec{sip.PCMU}})
	require.NoError(t, err, "the demo number answers")
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Hangup(ctx, "test over"))
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestStopIsClean: an appliance stops within its drain window and leaves
// no goroutine behind.
func TestStopIsClean(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), nil))
	status, _, _ := d.Do(t, "GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, status)
	d.Stop(t)
}

func containsWildcard(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '{' {
			return true
		}
	}
	return false
}

// loopbackRTP is a free loopback UDP address for the caller's media (the
// appliance's RTP to it goes nowhere; the call's signalling is what is
// checked).
func loopbackRTP(t *testing.T) netip.AddrPort {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return netip.MustParseAddrPort(conn.LocalAddr().String())
}

// TestPprofListener: with pprof_addr set, Go's profiler answers there and
// the API's routes do not; without it, the API's listener has no profiler.
func TestPprofListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), map[string]string{"SWITCHBOARD_PPROF_ADDR": addr}))
	get := func(url string) int {
		res, err := http.Get(url)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusNotFound, get("http://"+addr+"/healthz"), "nothing of the API on the profiler's listener")
	require.NotEqual(t, http.StatusOK, get(d.URL+"/debug/pprof/goroutine"), "no profiler on the API's listener")
}
