package outbound

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/api/httpx"
	"switchboard/call"
	"switchboard/sip"
	"switchboard/store"
)

// noDeps satisfies the Service's interfaces for tests of its checks and
// limits, which never reach them.
type noDeps struct{}

func (noDeps) Origin(context.Context, string, string) (*Origin, error) { return nil, ErrUnknownNumber }
func (noDeps) Load(context.Context, string) (*agent.Config, error)     { return nil, agent.ErrUnknownAgent }
func (noDeps) Place(context.Context, sip.PlaceRequest) (*sip.Call, error) {
	return nil, errors.New("not in this test")
}

type noCalls struct{}

func (noCalls) Place(*sip.Call, call.MachineDetection, func()) *call.Call { return nil }

func newTestService(t *testing.T, o Options) *Service {
	t.Helper()
	o.Numbers, o.Agents, o.Placer, o.Calls, o.Records = noDeps{}, noDeps{}, noDeps{}, noCalls{}, func(call.Snapshot) any { return nil }
	if o.Slots == nil {
		o.Slots = openSlots(t, t.TempDir())
	}
	s, err := NewService(o)
	require.NoError(t, err)
	return s
}

// openSlots opens the slots of the SQLite store in dir (the same dir:
// the same store, as nodes share one).
func openSlots(t *testing.T, dir string) store.OutboundStore {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st.Outbound()
}

func TestNewServiceNeedsItsParts(t *testing.T) {
	_, err := NewService(Options{})
	require.Error(t, err)
	s := newTestService(t, Options{})
	require.Equal(t, DefaultMaxConcurrent, s.opts.MaxConcurrent)
	require.Equal(t, DefaultCallsPerSecond, s.opts.CallsPerSecond)
	require.Equal(t, DefaultRingTimeout, s.opts.RingTimeout)
}

func ptr[T any](v T) *T { return &v }

// TestCheck: every field of POST /v1/calls is validated with a 400 that
// names it; good requests are normalised.
func TestCheck(t *testing.T) {
	s := newTestService(t, Options{RingTimeout: 20 * time.Second})
	for _, tc := range []struct {
		name  string
		req   request
		param string // "" when valid
	}{
		{"no to", request{From: ptr("+14155550100")}, "to"},
		{"blank to", request{To: ptr("  "), From: ptr("+14155550100")}, "to"},
		{"to neither", request{To: ptr("hello"), From: ptr("+14155550100")}, "to"},
		{"bad SIP URI", request{To: ptr("sip:"), From: ptr("+14155550100")}, "to"},
		{"metadata address", request{To: ptr("sip:x@169.254.169.254"), From: ptr("+14155550100")}, "to"},
		{"no from", request{To: ptr("+14155550123")}, "from"},
		{"from not E.164", request{To: ptr("+14155550123"), From: ptr("alice")}, "from"},
		{"empty agent", request{To: ptr("+14155550123"), From: ptr("+14155550100"), AgentID: ptr(" ")}, "agent_id"},
		{"bad detection", request{To: ptr("+14155550123"), From: ptr("+14155550100"), MachineDetection: ptr("maybe")}, "machine_detection"},
		{"ring too short", request{To: ptr("+14155550123"), From: ptr("+14155550100"), RingTimeoutS: ptr(4)}, "ring_timeout_s"},
		{"ring too long", request{To: ptr("+14155550123"), From: ptr("+14155550100"), RingTimeoutS: ptr(121)}, "ring_timeout_s"},
		{"agent and stream", request{To: ptr("+14155550123"), From: ptr("+14155550100"), AgentID: ptr("ag_1"), Stream: &streamBody{URL: ptr("wss://bot.example/m")}}, "stream"},
		{"stream without url", request{To: ptr("+14155550123"), From: ptr("+14155550100"), Stream: &streamBody{}}, "stream.url"},
		{"stream url scheme", request{To: ptr("+14155550123"), From: ptr("+14155550100"), Stream: &streamBody{URL: ptr("http://bot.example/m")}}, "stream.url"},
		{"stream metadata address", request{To: ptr("+14155550123"), From: ptr("+14155550100"), Stream: &streamBody{URL: ptr("ws://169.254.169.254/")}}, "stream.url"},
		{"stream track", request{To: ptr("+14155550123"), From: ptr("+14155550100"), Stream: &streamBody{URL: ptr("wss://bot.example/m"), Track: ptr("all")}}, "stream.track"},
		{"stream protocol", request{To: ptr("+14155550123"), From: ptr("+14155550100"), Stream: &streamBody{URL: ptr("wss://bot.example/m"), Protocol: ptr("x")}}, "stream.protocol"},
		{"stream", request{To: ptr("+14155550123"), From: ptr("+14155550100"), Stream: &streamBody{URL: ptr("wss://bot.example/m"), Track: ptr("both")}}, ""},
		{"E.164", request{To: ptr("+14155550123"), From: ptr("+14155550100")}, ""},
		{"SIP URI", request{To: ptr("sip:alice@127.0.0.1:5070"), From: ptr("+14155550100"), MachineDetection: ptr("hangup_on_machine"), RingTimeoutS: ptr(5)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.check(&tc.req)
			if tc.param == "" {
				require.NoError(t, err)
				return
			}
			var he *httpx.Error
			require.ErrorAs(t, err, &he)
			require.Equal(t, http.StatusBadRequest, he.Status)
			require.Equal(t, tc.param, he.Param, he.Message)
			require.Nil(t, c)
		})
	}
	c, err := s.check(&request{To: ptr("+14155550123"), From: ptr("+14155550100")})
	require.NoError(t, err)
	require.Equal(t, &checked{to: "+14155550123", from: "+14155550100", md: call.MachineDetectionOff, ringTimeout: 20 * time.Second}, c)
	c, err = s.check(&request{To: ptr("sip:alice@127.0.0.1:5070"), From: ptr("+14155550100"), AgentID: ptr("ag_1"),
		MachineDetection: ptr("detect"), RingTimeoutS: ptr(45)})
	require.NoError(t, err)
	require.Equal(t, &checked{to: "sip:alice@127.0.0.1:5070", toURI: true, from: "+14155550100", agentID: "ag_1",
		md: call.MachineDetectionDetect, ringTimeout: 45 * time.Second}, c)
}

// TestReserveLimits: a team's placed calls are held to its calls per
// second and its calls at once (429 with Retry-After) counted over every
// node of the store, other teams are not affected, and a release counts
// once however often it is called.
func TestReserveLimits(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	a := newTestService(t, Options{MaxConcurrent: 2, CallsPerSecond: 1, Now: clock, NodeID: "a", Slots: openSlots(t, dir)})
	b := newTestService(t, Options{MaxConcurrent: 2, CallsPerSecond: 1, Now: clock, NodeID: "b", Slots: openSlots(t, dir)})
	r1, err := a.reserve(ctx, "t1")
	require.NoError(t, err)
	_, err = b.reserve(ctx, "t1")
	var he *httpx.Error
	require.ErrorAs(t, err, &he, "the rate holds across nodes")
	require.Equal(t, http.StatusTooManyRequests, he.Status)
	require.Equal(t, "rate_limited", he.Code)
	require.Equal(t, time.Second, he.RetryAfter)
	o1, err := b.reserve(ctx, "t2")
	require.NoError(t, err, "another team has its own limits")

	now = now.Add(time.Second)
	r2, err := b.reserve(ctx, "t1")
	require.NoError(t, err)
	now = now.Add(time.Second)
	_, err = a.reserve(ctx, "t1")
	require.ErrorAs(t, err, &he, "two calls in progress, one on each node")
	require.Equal(t, "too_many_calls", he.Code)
	require.Equal(t, 5*time.Second, he.RetryAfter)

	r1()
	r1()
	r3, err := a.reserve(ctx, "t1")
	require.NoError(t, err, "a release frees the slot")
	now = now.Add(time.Second)
	_, err = b.reserve(ctx, "t1")
	require.ErrorAs(t, err, &he, "a release counts once")
	require.Equal(t, "too_many_calls", he.Code)
	r2()
	r3()
	o1()
	now = now.Add(time.Second)
	for range 2 {
		_, err = a.reserve(ctx, "t1")
		require.NoError(t, err)
		now = now.Add(time.Second)
	}
}
