package numbers_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/numbers"
	"switchboard/store"
)

// TestRegistrationValidatedAndSealed sets, changes and removes a number's
// registration: every bad field is a 400 naming it, the password is never
// returned nor stored in the clear, Bindings opens it for the manager, and
// a change wakes the manager.
func TestRegistrationValidatedAndSealed(t *testing.T) {
	ctx := context.Background()
	changes := make(chan struct{}, 1)
	e := newEnvWith(t, nil, func(o *numbers.Options) { o.RegistrationChanges = changes })
	const password = "Pbx-Secret-77a1"
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Reg", "phone_number": "+14155550123",
		"registration": map[string]any{"registrar": "sip:127.0.0.1:5099", "username": "1001", "password": password}})
	n := obj(m, "phone_number")
	id := n["phone_number_id"].(string)
	require.Equal(t, map[string]any{"registrar": "sip:127.0.0.1:5099", "username": "1001", "expires_s": float64(300),
		"transport": "udp", "contact_user": "1001", "state": "off", "expires_at": nil, "last_status": float64(0)}, obj(n, "registration"))
	select {
	case <-changes:
	default:
		t.Fatal("the create did not wake the registration manager")
	}

	bs, err := e.svc.Bindings(ctx)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, password, bs[0].Password)
	require.Equal(t, []string{"+14155550123"}, bs[0].Numbers)
	require.Equal(t, []string{id}, bs[0].NumberIDs)
	require.Equal(t, 300*time.Second, bs[0].Expires)
	require.Equal(t, "1001", bs[0].ContactUser)

	for _, tc := range []struct {
		name  string
		reg   map[string]any
		param string
	}{
		{"no registrar", map[string]any{"username": "1001"}, "registration.registrar"},
		{"http registrar", map[string]any{"registrar": "http://pbx.example/", "username": "1001"}, "registration.registrar"},
		{"bare host", map[string]any{"registrar": "pbx.example", "username": "1001"}, "registration.registrar"},
		{"user part", map[string]any{"registrar": "sip:1001@pbx.example", "username": "1001"}, "registration.registrar"},
		{"transport in uri", map[string]any{"registrar": "sip:pbx.example;transport=tcp", "username": "1001"}, "registration.registrar"},
		{"metadata address", map[string]any{"registrar": "sip:169.254.169.254", "username": "1001"}, "registration.registrar"},
		{"bad proxy", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "outbound_proxy": "proxy.example"}, "registration.outbound_proxy"},
		{"bad transport", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "transport": "sctp"}, "registration.transport"},
		{"no username", map[string]any{"registrar": "sip:pbx.example"}, "registration.username"},
		{"bad username", map[string]any{"registrar": "sip:pbx.example", "username": "a b"}, "registration.username"},
		{"bad auth username", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "auth_username": "a@b"}, "registration.auth_username"},
		{"bad contact user", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "contact_user": "x y"}, "registration.contact_user"},
		{"short expiry", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "expires_s": 5}, "registration.expires_s"},
		{"long expiry", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "expires_s": 100000}, "registration.expires_s"},
		{"control in password", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "password": "a\nb"}, "registration.password"},
		{"unknown field", map[string]any{"registrar": "sip:pbx.example", "username": "1001", "realm": "x"}, "realm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550124",
				"registration": tc.reg}, http.StatusBadRequest, tc.param)
			if tc.name != "no registrar" && tc.name != "no username" { // a PATCH keeps the fields it does not name
				e.fails("PATCH", "/v2/phone-numbers/"+id, map[string]any{"registration": tc.reg}, http.StatusBadRequest, tc.param)
			}
		})
	}

	// PATCH changes the fields it names and keeps the password.
	n = obj(e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"registration": map[string]any{"expires_s": 600, "transport": "TCP",
		"contact_user": "sb-1001"}}), "phone_number")
	reg := obj(n, "registration")
	require.Equal(t, float64(600), reg["expires_s"])
	require.Equal(t, "tcp", reg["transport"])
	require.Equal(t, "sb-1001", reg["contact_user"])
	bs, err = e.svc.Bindings(ctx)
	require.NoError(t, err)
	require.Equal(t, password, bs[0].Password)
	require.Equal(t, "tcp", bs[0].Transport)

	for _, p := range []string{"/v2/phone-numbers/" + id, "/v2/phone-numbers"} {
		_, body, _ := e.do("GET", p, "team-a", nil)
		require.NotContains(t, body, password)
		require.NotContains(t, body, `"password"`)
	}

	// null removes it.
	n = obj(e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"registration": nil}), "phone_number")
	require.Nil(t, n["registration"])
	bs, err = e.svc.Bindings(ctx)
	require.NoError(t, err)
	require.Empty(t, bs)

	require.NoError(t, e.st.Close())
	require.NoError(t, filepath.Walk(e.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		require.False(t, strings.Contains(string(b), password), "the registration password is in the clear in %s", path)
		return nil
	}))
}

// TestRegistrationShared: numbers registering the same account with the
// same contact share one binding (and its password); a contact user that
// another account's registration binds is a conflict; deleting a number
// removes its registration.
func TestRegistrationShared(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	trunk := map[string]any{"registrar": "sip:carrier.example", "username": "acct-9", "password": "trunk-pass-1", "expires_s": 600}
	first := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "A", "phone_number": "+14155550130",
		"registration": trunk}), "phone_number")
	trunk["expires_s"] = 120
	second := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "B", "phone_number": "+14155550131",
		"registration": trunk}), "phone_number")
	bs, err := e.svc.Bindings(ctx)
	require.NoError(t, err)
	require.Len(t, bs, 1, "one account, one contact: one registration")
	require.Equal(t, []string{"+14155550130", "+14155550131"}, bs[0].Numbers, "the oldest number first")
	require.Equal(t, 120*time.Second, bs[0].Expires, "the shortest interval holds for all")

	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "C", "phone_number": "+14155550132",
		"registration": map[string]any{"registrar": "sip:carrier.example", "username": "acct-9", "password": "another-pass"}},
		http.StatusConflict, "registration.password")
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "C", "phone_number": "+14155550132",
		"registration": map[string]any{"registrar": "sip:other.example", "username": "x", "contact_user": "acct-9"}},
		http.StatusConflict, "registration.contact_user")
	// Another team cannot share the binding, nor learn which number has it.
	st, raw, _ := e.do("POST", "/v2/phone-numbers", "team-b", map[string]any{"origin": "byo_trunk", "name": "T", "phone_number": "+14155550133",
		"registration": trunk})
	require.Equal(t, http.StatusConflict, st, raw)
	require.Contains(t, raw, "registration.contact_user")
	require.NotContains(t, raw, "+1415555013")

	// The state the holder of the binding wrote shows on both numbers.
	key := bindingKeyOf(t, e, first["phone_number_id"].(string))
	exp := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	ok, err := e.st.Registrations().Claim(ctx, key, "node-x", time.Now().Add(time.Minute), time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, e.st.Registrations().SetState(ctx, &store.RegistrationBinding{Key: key, NodeID: "node-x", State: store.RegistrationRegistered,
		Expires: exp, LastStatus: 200, UpdateTime: time.Now()}))
	for _, n := range []map[string]any{first, second} {
		reg := obj(e.ok("GET", "/v2/phone-numbers/"+n["phone_number_id"].(string), nil), "registration")
		require.Equal(t, "registered", reg["state"])
		require.Equal(t, exp.Format(time.RFC3339), reg["expires_at"])
		require.Equal(t, float64(200), reg["last_status"])
		require.Equal(t, "node-x", reg["node_id"])
	}

	e.ok("DELETE", "/v2/phone-numbers/"+first["phone_number_id"].(string), nil)
	bs, err = e.svc.Bindings(ctx)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, []string{"+14155550131"}, bs[0].Numbers)
}

func bindingKeyOf(t *testing.T, e *env, numberID string) string {
	t.Helper()
	r, err := e.st.Registrations().Get(context.Background(), numberID)
	require.NoError(t, err)
	return r.BindingKey
}
