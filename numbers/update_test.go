package numbers_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func TestPatchRoutes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	ag := e.newAgent("Receptionist")
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Main", "phone_number": "+14155550120",
		"webhook": map[string]any{"url": "https://one.example/h", "auth_token": "tok-1"}})
	id := obj(m, "phone_number")["phone_number_id"].(string)
	path := "/v2/phone-numbers/" + id
	firstHook := obj(m, "webhook")["webhook_id"].(string)
	firstSecret := obj(m, "webhook")["dispatch_signing_secret"].(string)

	// Changing the existing webhook keeps its id and secret; no secret is shown.
	m = e.ok("PATCH", path, map[string]any{"webhook": map[string]any{"url": "https://two.example/h", "name": "Hook"}})
	require.NotContains(t, m, "webhook")
	n := obj(m, "phone_number")
	require.Equal(t, map[string]any{"webhook_id": firstHook, "name": "Hook", "url": "https://two.example/h"}, obj(n, "webhook"))
	d, err := e.svc.Webhook(ctx, id)
	require.NoError(t, err)
	require.Equal(t, firstSecret, d.SigningSecret)
	require.Equal(t, "tok-1", d.AuthToken, "an absent auth_token is kept")

	// An agent alongside the webhook breaks the exclusive-route rule.
	e.fails("PATCH", path, map[string]any{"agent_id": ag}, http.StatusBadRequest, "agent_id")
	e.fails("PATCH", path, map[string]any{"agent_id": "ag_missing", "webhook": nil}, http.StatusBadRequest, "agent_id")
	// Switching to the agent removes the webhook.
	n = obj(e.ok("PATCH", path, map[string]any{"agent_id": ag, "webhook": nil}), "phone_number")
	require.Equal(t, ag, n["agent_id"])
	require.Equal(t, "Receptionist", n["agent_name"])
	require.Equal(t, "", n["webhook_id"])
	require.NotContains(t, n, "webhook")
	_, err = e.st.Numbers().Webhook(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound)

	// A webhook while the agent stays is refused; with agent_id null it is
	// a new webhook whose secret is returned once.
	e.fails("PATCH", path, map[string]any{"webhook": map[string]any{"url": "https://three.example/h"}}, http.StatusBadRequest, "webhook")
	m = e.ok("PATCH", path, map[string]any{"agent_id": nil, "webhook": map[string]any{"url": "https://three.example/h"}})
	wh := obj(m, "webhook")
	require.NotEqual(t, firstHook, wh["webhook_id"])
	require.NotEqual(t, firstSecret, wh["dispatch_signing_secret"])
	n = obj(m, "phone_number")
	require.Equal(t, "", n["agent_id"])
	require.Equal(t, "", n["agent_name"])
	require.Equal(t, wh["webhook_id"], n["webhook_id"])
	require.Equal(t, "Main", obj(n, "webhook")["name"])
	d, err = e.svc.Webhook(ctx, id)
	require.NoError(t, err)
	require.Equal(t, wh["dispatch_signing_secret"], d.SigningSecret)
	require.Empty(t, d.AuthToken)

	// Webhook rules hold after a merge.
	e.fails("PATCH", path, map[string]any{"webhook": map[string]any{"url": nil}}, http.StatusBadRequest, "webhook.url")
	e.fails("PATCH", path, map[string]any{"webhook": map[string]any{"url": "gopher://x"}}, http.StatusBadRequest, "webhook.url")
	e.fails("PATCH", path, map[string]any{"webhook": map[string]any{"auth_url": "https://a.example/t"}}, http.StatusBadRequest, "webhook.auth_token")
	e.ok("PATCH", path, map[string]any{"webhook": map[string]any{"auth_url": "https://a.example/t", "auth_token": "cred"}})
	e.fails("PATCH", path, map[string]any{"webhook": map[string]any{"auth_token": nil}}, http.StatusBadRequest, "webhook.auth_token")
	e.ok("PATCH", path, map[string]any{"webhook": map[string]any{"auth_token": nil, "auth_url": nil}})
	d, err = e.svc.Webhook(ctx, id)
	require.NoError(t, err)
	require.Empty(t, d.AuthToken)
	require.Empty(t, d.AuthURL)
}

func TestPatchFields(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Main", "phone_number": "+14155550130",
		"sip_auth": map[string]any{"auth_username": "u1", "auth_password": "password-one", "allowed_addresses": []string{"10.0.0.0/8"}}})
	before := obj(m, "phone_number")
	path := "/v2/phone-numbers/" + before["phone_number_id"].(string)
	prov := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "svc_provisioned", "name": "P"}), "phone_number")
	provPath := "/v2/phone-numbers/" + prov["phone_number_id"].(string)

	cases := []struct {
		name  string
		path  string
		body  any
		param string
	}{
		{"origin change", path, map[string]any{"origin": "svc_provisioned"}, "origin"},
		{"area_code is not patchable", path, map[string]any{"area_code": "415"}, "area_code"},
		{"empty name", path, map[string]any{"name": ""}, "name"},
		{"null name", path, map[string]any{"name": nil}, "name"},
		{"provisioned number change", provPath, map[string]any{"phone_number": "+14155550131"}, "phone_number"},
		{"bad number", path, map[string]any{"phone_number": "+1415"}, "phone_number"},
		{"username alone", path, map[string]any{"sip_auth": map[string]any{"auth_username": "u2"}}, "sip_auth.auth_password"},
		{"password alone", path, map[string]any{"sip_auth": map[string]any{"auth_password": "password-two"}}, "sip_auth.auth_username"},
		{"half null", path, map[string]any{"sip_auth": map[string]any{"auth_username": "u2", "auth_password": nil}}, "sip_auth.auth_password"},
		{"bad cidr", path, map[string]any{"sip_auth": map[string]any{"allowed_addresses": []string{"x"}}}, "sip_auth.allowed_addresses[0]"},
		{"unknown field", path, map[string]any{"inbound_trunk_id": "tr_x"}, "inbound_trunk_id"},
		{"bad srtp", path, map[string]any{"srtp": "mandatory"}, "srtp"},
		{"not an object", path, `"x"`, ""},
		{"empty body", path, ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.fails("PATCH", c.path, c.body, http.StatusBadRequest, c.param)
		})
	}
	e.t = t
	require.Equal(t, before, e.ok("GET", path, nil), "failed patches change nothing")

	// The same origin is accepted; fields present change, others stay.
	n := obj(e.ok("PATCH", path, map[string]any{"origin": "byo_trunk", "name": "Renamed", "phone_number": "+1 415 555 0132"}), "phone_number")
	require.Equal(t, "Renamed", n["name"])
	require.Equal(t, "+14155550132", n["phone_number"])
	require.Equal(t, before["inbound_trunk_id"], n["inbound_trunk_id"])
	require.Equal(t, before["created_at"], n["created_at"])
	require.Equal(t, obj(before, "sip_auth"), obj(n, "sip_auth"))
	_, err := e.svc.Resolve(ctx, "+14155550130")
	require.Error(t, err, "the old number no longer routes")

	// Taking another number's E.164 is a conflict.
	e.fails("PATCH", path, map[string]any{"phone_number": prov["phone_number"]}, http.StatusConflict, "phone_number")

	// Credentials change together; the address list stays when absent.
	e.ok("PATCH", path, map[string]any{"sip_auth": map[string]any{"auth_username": "u2", "auth_password": "password-two"}})
	res, err := e.svc.Resolve(ctx, "+14155550132")
	require.NoError(t, err)
	require.Equal(t, "u2", res.AuthUsername)
	require.Equal(t, "password-two", res.AuthPassword)
	require.Len(t, res.AllowedPrefixes, 1)

	// Null credentials remove digest auth; a new list replaces the old.
	n = obj(e.ok("PATCH", path, map[string]any{"sip_auth": map[string]any{"auth_username": nil, "auth_password": nil,
		"allowed_addresses": []string{"192.0.2.1", "198.51.100.0/24"}}}), "phone_number")
	require.Equal(t, map[string]any{"allowed_addresses": []any{"192.0.2.1/32", "198.51.100.0/24"}}, obj(n, "sip_auth"))
	res, err = e.svc.Resolve(ctx, "+14155550132")
	require.NoError(t, err)
	require.Empty(t, res.AuthUsername)
	require.Empty(t, res.AuthPassword)

	// sip_auth null clears everything.
	n = obj(e.ok("PATCH", path, map[string]any{"sip_auth": nil}), "phone_number")
	require.Equal(t, map[string]any{"allowed_addresses": []any{}}, obj(n, "sip_auth"))

	// Another team cannot patch it.
	status, _, _ := e.do("PATCH", path, "team-b", map[string]any{"name": "mine"})
	require.Equal(t, http.StatusNotFound, status)
	e.fails("PATCH", "/v2/phone-numbers/pn_nope", map[string]any{"name": "x"}, http.StatusNotFound, "")
}

// TestSRTPSetting: a number's srtp is stored, shown, resolved for the SIP
// layer and changed by PATCH; "" follows the appliance's setting.
func TestSRTPSetting(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "T", "phone_number": "+14155550140", "srtp": "sometimes"},
		http.StatusBadRequest, "srtp")
	n := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "T", "phone_number": "+14155550140", "srtp": "Required"}), "phone_number")
	require.Equal(t, "required", n["srtp"])
	res, err := e.svc.Resolve(ctx, "+14155550140")
	require.NoError(t, err)
	require.Equal(t, "required", res.SRTP)
	path := "/v2/phone-numbers/" + n["phone_number_id"].(string)
	n = obj(e.ok("PATCH", path, map[string]any{"srtp": "off"}), "phone_number")
	require.Equal(t, "off", n["srtp"])
	n = obj(e.ok("PATCH", path, map[string]any{"srtp": nil}), "phone_number")
	require.NotContains(t, n, "srtp", "null: back to the appliance's setting")
	res, err = e.svc.Resolve(ctx, "+14155550140")
	require.NoError(t, err)
	require.Empty(t, res.SRTP)
}

// TestCodecsSetting: a number's codec preference is checked, stored in
// canonical spelling, shown, resolved for the SIP layer and cleared by
// PATCH with null.
func TestCodecsSetting(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "C", "phone_number": "+14155550141", "codecs": []string{"G722", "G729"}},
		http.StatusBadRequest, "codecs[1]")
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "C", "phone_number": "+14155550141", "codecs": []string{"pcmu", "PCMU"}},
		http.StatusBadRequest, "codecs[1]")
	n := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "C", "phone_number": "+14155550141", "codecs": []string{"pcma", "g722"}}), "phone_number")
	require.Equal(t, []any{"PCMA", "G722"}, n["codecs"])
	res, err := e.svc.Resolve(ctx, "+14155550141")
	require.NoError(t, err)
	require.Equal(t, []string{"PCMA", "G722"}, res.Codecs)
	path := "/v2/phone-numbers/" + n["phone_number_id"].(string)
	n = obj(e.ok("PATCH", path, map[string]any{"codecs": []string{"PCMU"}}), "phone_number")
	require.Equal(t, []any{"PCMU"}, n["codecs"])
	n = obj(e.ok("PATCH", path, map[string]any{"codecs": []string{"Opus", "g722", "pcmu"}}), "phone_number")
	require.Equal(t, []any{"OPUS", "G722", "PCMU"}, n["codecs"])
	e.fails("PATCH", path, map[string]any{"codecs": []string{"OPUS", "opus"}}, http.StatusBadRequest, "codecs[1]")
	e.fails("PATCH", path, map[string]any{"codecs": []string{"OPUS", "SILK"}}, http.StatusBadRequest, "codecs[1]")
	n = obj(e.ok("PATCH", path, map[string]any{"codecs": nil}), "phone_number")
	require.NotContains(t, n, "codecs", "null: the best codec both sides have")
	res, err = e.svc.Resolve(ctx, "+14155550141")
	require.NoError(t, err)
	require.Empty(t, res.Codecs)
}
