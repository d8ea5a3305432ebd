package test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/sip"
	"switchboard/sip/siptest"
)

// TestTransferAPIErrors: every bad transfer, hold or resume request on a
// live call gets 400 with the JSON error naming the field in API terms;
// an unknown call 404; a resume of a call not on hold, and anything on a
// call that ended, 409. The call is untouched by the refusals.
func TestTransferAPIErrors(t *testing.T) {
	t.Parallel()
	d := callDaemon(t, nil)
	number := transferAgent(t, d, "+14155557305")
	peer := newRTPPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := siptest.NewSoftphone(t).Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: number,
		RTPAddr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(peer.port())), Codecs: []sip.Codec{sip.PCMU}})
	require.NoError(t, err)
	c := liveCall(t, d)
	path := "/v1/calls/" + c.ID()
	const human = "sip:human@127.0.0.1:5999"
	cases := []struct {
		name  string
		body  any
		param string
		code  string // "" : any
	}{
		{"no target", map[string]any{}, "target_uri", ""},
		{"not a URI", map[string]any{"target_uri": "operator@example.com"}, "target_uri", ""},
		{"short tel", map[string]any{"target_uri": "tel:12"}, "target_uri", ""},
		{"tel without a trunk", map[string]any{"target_uri": "tel:+14155550199"}, "target_uri", "no_outbound_trunk"},
		{"metadata address", map[string]any{"target_uri": "sip:x@169.254.169.254"}, "target_uri", ""},
		{"mode", map[string]any{"target_uri": human, "mode": "blind"}, "mode", ""},
		{"replaces without refer", map[string]any{"target_uri": human, "mode": "bridge", "replaces": true}, "replaces", ""},
		{"briefing of a bridge", map[string]any{"target_uri": human, "mode": "bridge", "briefing": "hi"}, "briefing", ""},
		{"accept", map[string]any{"target_uri": human, "mode": "warm", "accept": "maybe"}, "accept", ""},
		{"timeout too short", map[string]any{"target_uri": human, "timeout_s": 2}, "timeout_s", ""},
		{"timeout zero", map[string]any{"target_uri": human, "timeout_s": 0}, "timeout_s", ""},
		{"timeout not a number", map[string]any{"target_uri": human, "timeout_s": "10"}, "timeout_s", ""},
		{"hold audio outside", map[string]any{"target_uri": human, "hold_audio": "../../etc/x.wav"}, "hold_audio", ""},
		{"reserved header", map[string]any{"target_uri": human, "headers": map[string]any{"Via": "x"}}, "headers.Via", ""},
		{"header value", map[string]any{"target_uri": human, "headers": map[string]any{"X-Account": 7}}, "headers.X-Account", ""},
		{"not JSON", "{", "", ""},
	}
	for _, tc := range cases {
		status, _, raw := d.Do(t, "POST", path+"/transfer", d.OwnerKey, tc.body)
		require.Equal(t, 400, status, "%s: %s", tc.name, raw)
		code, param, msg := apptest.ErrorOf(t, raw)
		require.NotEmpty(t, msg, tc.name)
		if tc.param != "" {
			require.Equal(t, tc.param, param, "%s: %s", tc.name, raw)
		}
		if tc.code != "" {
			require.Equal(t, tc.code, code, "%s: %s", tc.name, raw)
		}
	}
	status, _, raw := d.Do(t, "POST", path+"/hold", d.OwnerKey, map[string]any{"audio": "../secret.wav"})
	require.Equal(t, 400, status, "%s", raw)
	_, param, _ := apptest.ErrorOf(t, raw)
	require.Equal(t, "audio", param)
	status, _, raw = d.Do(t, "POST", path+"/hold", d.OwnerKey, map[string]any{"audio": "missing.wav"})
	require.Equal(t, 400, status, "a WAV file that is not there: %s", raw)
	_, param, _ = apptest.ErrorOf(t, raw)
	require.Equal(t, "audio", param)
	status, _, raw = d.Do(t, "POST", path+"/resume", d.OwnerKey, map[string]any{})
	require.Equal(t, 409, status, "not on hold: %s", raw)
	// Both take a request without a body, as curl -X POST sends it: hold
	// with its default audio.
	status, _, raw = d.Do(t, "POST", path+"/resume", d.OwnerKey, nil)
	require.Equal(t, 409, status, "not on hold, no body: %s", raw)
	status, _, raw = d.Do(t, "POST", path+"/hold", d.OwnerKey, nil)
	require.Equal(t, 200, status, "hold, no body: %s", raw)
	status, _, raw = d.Do(t, "POST", path+"/resume", d.OwnerKey, nil)
	require.Equal(t, 200, status, "resume, no body: %s", raw)
	bodies := map[string]any{"transfer": map[string]any{"target_uri": human}, "hold": map[string]any{}, "resume": nil}
	for _, verb := range []string{"transfer", "hold", "resume"} {
		status, _, raw = d.Do(t, "POST", "/v1/calls/nope/"+verb, d.OwnerKey, bodies[verb])
		require.Equal(t, 404, status, "%s of an unknown call: %s", verb, raw)
	}
	require.Len(t, transferSteps(d.JSON(t, "GET", "/v1/calls/"+c.ID(), d.OwnerKey, nil, 200)), 0, "nothing was started")

	require.NoError(t, out.Hangup(ctx, "done"))
	requireNoCalls(t, d)
	for _, verb := range []string{"transfer", "hold", "resume"} {
		status, _, raw = d.Do(t, "POST", path+"/"+verb, d.OwnerKey, bodies[verb])
		require.Contains(t, []int{404, 409}, status, "%s of an ended call: %s", verb, raw)
	}
}
