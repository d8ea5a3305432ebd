package test

import (
	"context"
	"encoding/json"
	"math"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

const demoNumber = "+18005550100"

// phone is a caller: a SIP dialer and an RTP session on loopback.
type phone struct {
	dialer *sip.Softphone
	sess   *media.Session
}

func newPhone(t *testing.T) *phone {
	t.Helper()
	lo := netip.MustParseAddr("127.0.0.1")
	r := takePorts(t, 2)
	pool, err := media.NewPortPool(lo, r.lo, r.hi)
	require.NoError(t, err)
	t.Cleanup(func() { pool.Close() })
	pair, err := pool.Allocate()
	require.NoError(t, err)
	sess, err := media.NewSession(pair, media.SessionOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sess.Close()) })
	return &phone{dialer: siptest.NewSoftphone(t), sess: sess}
}

// call dials the demo number of d from `from` and starts sending a tone.
func (p *phone) call(t *testing.T, d *apptest.Daemon, from string) *sip.SoftphoneCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	oc, err := p.dialer.Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: demoNumber, From: from,
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(p.sess.LocalPort()))})
	require.NoError(t, err)
	p.sess.SetRemote(oc.Media().RemoteAddr)
	tone := make([]int16, 8000*2) // 2 s of 440 Hz
	for i := range tone {
		tone[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000))
	}
	p.sess.Playout().Write("tone", tone)
	return oc
}

// lasts waits until the appliance sent the phone n more frames of the
// call: n × 20 ms of its frame clock, which never runs ahead of real time
// (a stalled pacer skips frames rather than catching up by more than a
// few); false (an error of the test) if the media stopped.
func (p *phone) lasts(t *testing.T, n int) bool {
	from := p.sess.Stats().PacketsIn
	return assert.Eventually(t, func() bool { return p.sess.Stats().PacketsIn >= from+uint64(n) }, 10*time.Second, 10*time.Millisecond,
		"%d frames of the call's media", n)
}

// callRecord is the part of a call record the tests read.
type callRecord struct {
	CallID        string  `json:"call_id"`
	PhoneNumberID string  `json:"phone_number_id"`
	PhoneNumber   string  `json:"phone_number"`
	From          string  `json:"from"`
	To            string  `json:"to"`
	SIPCallID     string  `json:"sip_call_id"`
	Route         string  `json:"route"`
	State         string  `json:"state"`
	InvitedAt     *string `json:"invited_at"`
	AnsweredAt    *string `json:"answered_at"`
	EndedAt       *string `json:"ended_at"`
	DurationMS    int64   `json:"duration_ms"`
	EndedBy       string  `json:"ended_by"`
	EndReason     string  `json:"end_reason"`
	Media         struct {
		PacketsIn  uint64 `json:"packets_in"`
		PacketsOut uint64 `json:"packets_out"`
	} `json:"media"`
	Transcript []any `json:"transcript"`
}

func listCalls(t *testing.T, d *apptest.Daemon, key string, q url.Values) []callRecord {
	t.Helper()
	st, _, raw := d.Do(t, "GET", "/v1/calls?"+q.Encode(), key, nil)
	require.Equal(t, 200, st, "%s", raw)
	var out struct {
		Calls []callRecord `json:"calls"`
	}
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return out.Calls
}

func getCall(t *testing.T, d *apptest.Daemon, key, id string) callRecord {
	t.Helper()
	st, _, raw := d.Do(t, "GET", "/v1/calls/"+id, key, nil)
	require.Equal(t, 200, st, "%s", raw)
	var c callRecord
	require.NoError(t, json.Unmarshal(raw, &c), "%s", raw)
	return c
}

func parseTime(t *testing.T, s *string) time.Time {
	t.Helper()
	require.NotNil(t, s)
	v, err := time.Parse(time.RFC3339, *s)
	require.NoError(t, err)
	return v
}

func TestCallRecordsOfRealCalls(t *testing.T) {
	dir := t.TempDir()
	d := apptest.Start(t, apptest.Config(t, dir, nil))
	owner := d.OwnerKey
	p := newPhone(t)
	oc := p.call(t, d, "+14155550123")

	// While it runs, the call is listed as active, with live media figures.
	var live callRecord
	require.Eventually(t, func() bool {
		for _, c := range listCalls(t, d, owner, nil) {
			if c.SIPCallID == oc.SIPCallID() && c.State == "active" && c.Media.PacketsIn > 0 {
				live = c
				return true
			}
		}
		return false
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, demoNumber, live.PhoneNumber)
	require.Equal(t, "+14155550123", live.From)
	require.Equal(t, demoNumber, live.To)
	require.Contains(t, live.Route, "agent:")
	require.Nil(t, live.EndedAt)
	got := getCall(t, d, owner, live.CallID)
	require.Equal(t, "active", got.State)
	require.NotNil(t, got.AnsweredAt)
	require.Equal(t, []callRecord{}, nonNilCalls(listCalls(t, d, owner, url.Values{"state": {"ended"}})))
	require.Len(t, listCalls(t, d, owner, url.Values{"state": {"active"}}), 1)
	// The store holds it already, open and answered: a crash now loses nothing.
	require.Eventually(t, func() bool {
		sc, err := d.App.Store().Calls().Get(context.Background(), live.CallID)
		return err == nil && sc.State == "active" && !sc.AnswerTime.IsZero() && sc.EndTime.IsZero() && !sc.AliveTime.IsZero()
	}, 5*time.Second, 20*time.Millisecond, "the answered call's record is stored while it goes on")

	// The call lasts a second (real time: 55 frames, a few of them maybe
	// caught up after a stall): its record's figures show it.
	require.True(t, p.lasts(t, 55))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, oc.Hangup(ctx, "done"))

	// Once hung up, the stored record has the final figures.
	var rec callRecord
	require.Eventually(t, func() bool {
		st, _, raw := d.Do(t, "GET", "/v1/calls/"+live.CallID, owner, nil)
		return st == 200 && json.Unmarshal(raw, &rec) == nil && rec.State == "ended"
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "caller", rec.EndedBy)
	require.Equal(t, oc.SIPCallID(), rec.SIPCallID)
	inv, ans, end := parseTime(t, rec.InvitedAt), parseTime(t, rec.AnsweredAt), parseTime(t, rec.EndedAt)
	require.False(t, ans.Before(inv))
	require.True(t, end.After(ans))
	require.GreaterOrEqual(t, rec.DurationMS, int64(900))
	require.InDelta(t, end.Sub(ans).Milliseconds(), rec.DurationMS, 1, "duration_ms is answered_at to ended_at (ms-rounded times)")
	require.Greater(t, rec.Media.PacketsIn, uint64(20), "the caller sent about a second of RTP")
	require.NotNil(t, rec.Transcript)

	// The record is listed as ended (and found by the filters).
	require.Eventually(t, func() bool {
		cs := listCalls(t, d, owner, url.Values{"state": {"ended"}, "from": {"+14155550123"}, "phone_number_id": {rec.PhoneNumberID}})
		return len(cs) == 1 && cs[0].CallID == rec.CallID
	}, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, listCalls(t, d, owner, url.Values{"state": {"active"}}))

	st, _, raw := d.Do(t, "GET", "/v1/calls/00000000-0000-0000-0000-000000000000", owner, nil)
	require.Equal(t, 404, st)
	code, _, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "not_found", code)
	st, _, raw = d.Do(t, "GET", "/v1/calls?state=done", owner, nil)
	require.Equal(t, 400, st)
	_, param, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "state", param)

	// ACL: the calls endpoint needs api-key:endpoint:calls.
	mk := func(acls ...string) string {
		k := d.JSON(t, "POST", "/auth/teams/default/api-keys", owner, map[string]any{"name": acls[0], "acls": acls}, 200)
		return k["apiKey"].(string)
	}
	numbersOnly, callsOnly := mk("api-key:endpoint:phone-numbers", "api-key:model:*"), mk("api-key:endpoint:calls", "api-key:model:*")
	for _, path := range []string{"/v1/calls", "/v1/calls/" + rec.CallID} {
		st, _, raw = d.Do(t, "GET", path, numbersOnly, nil)
		require.Equal(t, 403, st, "%s", raw)
		st, _, raw = d.Do(t, "GET", path, callsOnly, nil)
		require.Equal(t, 200, st, "%s", raw)
	}

	// The record survives a restart.
	d.Stop(t)
	d2 := apptest.Start(t, apptest.Config(t, dir, nil))
	again := getCall(t, d2, owner, rec.CallID)
	require.Equal(t, rec, again)
}

func nonNilCalls(c []callRecord) []callRecord {
	if c == nil {
		return []callRecord{}
	}
	return c
}
