package numbers_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/numbers"
)

// TestOutboundTrunkValidatedAndSealed sets, changes and removes a
// number's outbound trunk: every bad field is a 400 naming it, the
// password is never returned nor stored in the clear, and Originate
// opens it for the call that uses it.
func TestOutboundTrunkValidatedAndSealed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	const password = "Carrier-Secret-5b1e77"
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Out", "phone_number": "+14155550123",
		"outbound_trunk": map[string]any{"uri": "sip:127.0.0.1:5099;transport=udp", "auth_username": "acct-1", "auth_password": password,
			"caller_id": "+1 415 555 0123"}})
	n := obj(m, "phone_number")
	id := n["phone_number_id"].(string)
	require.Equal(t, map[string]any{"uri": "sip:127.0.0.1:5099;transport=udp", "auth_username": "acct-1", "caller_id": "+14155550123"},
		obj(n, "outbound_trunk"))

	o, err := e.svc.Originate(ctx, "team_a", "+14155550123")
	require.NoError(t, err)
	require.Equal(t, "sip:127.0.0.1:5099;transport=udp", o.TrunkURI)
	require.Equal(t, "acct-1", o.AuthUsername)
	require.Equal(t, password, o.AuthPassword)
	require.Equal(t, "+14155550123", o.CallerID)
	_, err = e.svc.Originate(ctx, "team_b", "+14155550123")
	require.ErrorIs(t, err, numbers.ErrUnknownNumber, "another team's number places no call")

	for _, tc := range []struct {
		name  string
		trunk map[string]any
		param string
	}{
		{"no uri", map[string]any{"caller_id": "+14155550123"}, "outbound_trunk.uri"},
		{"http uri", map[string]any{"uri": "http://carrier.example/"}, "outbound_trunk.uri"},
		{"user part", map[string]any{"uri": "sip:+14155550100@carrier.example"}, "outbound_trunk.uri"},
		{"bad transport", map[string]any{"uri": "sip:carrier.example;transport=sctp"}, "outbound_trunk.uri"},
		{"metadata address", map[string]any{"uri": "sip:169.254.169.254"}, "outbound_trunk.uri"},
		{"uri headers", map[string]any{"uri": "sip:carrier.example?X-A=1"}, "outbound_trunk.uri"},
		{"username alone", map[string]any{"uri": "sip:carrier.example", "auth_username": "u"}, "outbound_trunk.auth_password"},
		{"password alone", map[string]any{"uri": "sip:carrier.example", "auth_password": password}, "outbound_trunk.auth_username"},
		{"short password", map[string]any{"uri": "sip:carrier.example", "auth_username": "u", "auth_password": "short"}, "outbound_trunk.auth_password"},
		{"bad username", map[string]any{"uri": "sip:carrier.example", "auth_username": "a b", "auth_password": password}, "outbound_trunk.auth_username"},
		{"bad caller id", map[string]any{"uri": "sip:carrier.example", "caller_id": "me@there"}, "outbound_trunk.caller_id"},
		{"unknown field", map[string]any{"uri": "sip:carrier.example", "proxy": "x"}, "proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550124",
				"outbound_trunk": tc.trunk}, http.StatusBadRequest, tc.param)
		})
	}

	// PATCH changes the fields it names and keeps the password.
	n = obj(e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"outbound_trunk": map[string]any{"uri": "sip:carrier.example:5070;transport=tcp"}}), "phone_number")
	require.Equal(t, map[string]any{"uri": "sip:carrier.example:5070;transport=tcp", "auth_username": "acct-1", "caller_id": "+14155550123"},
		obj(n, "outbound_trunk"))
	o, err = e.svc.Originate(ctx, "team_a", "+14155550123")
	require.NoError(t, err)
	require.Equal(t, password, o.AuthPassword)

	for _, p := range []string{"/v2/phone-numbers/" + id, "/v2/phone-numbers"} {
		_, body, _ := e.do("GET", p, "team-a", nil)
		require.NotContains(t, body, password)
		require.NotContains(t, body, "auth_password")
	}
	require.NoError(t, e.st.Close())
	err = filepath.Walk(e.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		require.False(t, strings.Contains(string(b), password), "the outbound password is in the clear in %s", path)
		return nil
	})
	require.NoError(t, err)
}

// TestOutboundTrunkRemoved: null removes the trunk; Originate then
// reports none, and the caller id falls back to the number.
func TestOutboundTrunkRemoved(t *testing.T) {
	e := newEnv(t, nil)
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Out", "phone_number": "+14155550125",
		"outbound_trunk": map[string]any{"uri": "sip:carrier.example"}})
	id := obj(m, "phone_number")["phone_number_id"].(string)
	n := obj(e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"outbound_trunk": nil}), "phone_number")
	require.Nil(t, n["outbound_trunk"])
	o, err := e.svc.Originate(context.Background(), "team_a", "+14155550125")
	require.NoError(t, err)
	require.Empty(t, o.TrunkURI)
	require.Equal(t, "+14155550125", o.CallerID)
}
