package numbers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCreateValidation(t *testing.T) {
	e := newEnv(t, nil)
	ag := e.newAgent("Sales bot")
	hook := map[string]any{"url": "https://example.com/hook"}
	byo := func(extra map[string]any) map[string]any {
		b := map[string]any{"origin": "byo_trunk", "name": "Sales", "phone_number": "+14155550199"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	cases := []struct {
		name   string
		body   any
		status int
		param  string
	}{
		{"no origin", map[string]any{"name": "x"}, 400, "origin"},
		{"bad origin", map[string]any{"origin": "cloud", "name": "x"}, 400, "origin"},
		{"no name", map[string]any{"origin": "svc_provisioned"}, 400, "name"},
		{"blank name", map[string]any{"origin": "svc_provisioned", "name": "  "}, 400, "name"},
		{"long name", map[string]any{"origin": "svc_provisioned", "name": strings.Repeat("n", 201)}, 400, "name"},
		{"byo without number", map[string]any{"origin": "byo_trunk", "name": "x"}, 400, "phone_number"},
		{"byo with area code", byo(map[string]any{"area_code": "415"}), 400, "area_code"},
		{"provisioned with number", map[string]any{"origin": "svc_provisioned", "name": "x", "phone_number": "+14155550199"}, 400, "phone_number"},
		{"bad area code", map[string]any{"origin": "svc_provisioned", "name": "x", "area_code": "41"}, 400, "area_code"},
		{"area code starting with 1", map[string]any{"origin": "svc_provisioned", "name": "x", "area_code": "115"}, 400, "area_code"},
		{"not e164", byo(map[string]any{"phone_number": "4155550199"}), 400, "phone_number"},
		{"invalid number", byo(map[string]any{"phone_number": "+15555550100"}), 400, "phone_number"},
		{"letters", byo(map[string]any{"phone_number": "+1415555CALL"}), 400, "phone_number"},
		{"agent and webhook", byo(map[string]any{"agent_id": ag, "webhook": hook}), 400, "webhook"},
		{"unknown agent", byo(map[string]any{"agent_id": "ag_nope"}), 400, "agent_id"},
		{"username alone", byo(map[string]any{"sip_auth": map[string]any{"auth_username": "pbx"}}), 400, "sip_auth.auth_password"},
		{"password alone", byo(map[string]any{"sip_auth": map[string]any{"auth_password": "longenough"}}), 400, "sip_auth.auth_username"},
		{"empty password", byo(map[string]any{"sip_auth": map[string]any{"auth_username": "pbx", "auth_password": ""}}), 400, "sip_auth.auth_password"},
		{"short password", byo(map[string]any{"sip_auth": map[string]any{"auth_username": "pbx", "auth_password": "short"}}), 400, "sip_auth.auth_password"},
		{"username with space", byo(map[string]any{"sip_auth": map[string]any{"auth_username": "p bx", "auth_password": "longenough"}}), 400, "sip_auth.auth_username"},
		{"username with colon", byo(map[string]any{"sip_auth": map[string]any{"auth_username": "p:bx", "auth_password": "longenough"}}), 400, "sip_auth.auth_username"},
		{"bad cidr", byo(map[string]any{"sip_auth": map[string]any{"allowed_addresses": []string{"10.0.0.0/8", "10.0.0.0/33"}}}), 400, "sip_auth.allowed_addresses[1]"},
		{"hostname not cidr", byo(map[string]any{"sip_auth": map[string]any{"allowed_addresses": []string{"pbx.example.com"}}}), 400, "sip_auth.allowed_addresses[0]"},
		{"webhook without url", byo(map[string]any{"webhook": map[string]any{"name": "h"}}), 400, "webhook.url"},
		{"webhook ftp url", byo(map[string]any{"webhook": map[string]any{"url": "ftp://example.com/x"}}), 400, "webhook.url"},
		{"webhook relative url", byo(map[string]any{"webhook": map[string]any{"url": "/hook"}}), 400, "webhook.url"},
		{"webhook no host", byo(map[string]any{"webhook": map[string]any{"url": "https:///hook"}}), 400, "webhook.url"},
		{"auth_url without token", byo(map[string]any{"webhook": map[string]any{"url": "https://a.example/h", "auth_url": "https://a.example/token"}}), 400, "webhook.auth_token"},
		{"bad auth_url", byo(map[string]any{"webhook": map[string]any{"url": "https://a.example/h", "auth_url": "mailto:x@y", "auth_token": "t"}}), 400, "webhook.auth_url"},
		{"webhook to metadata", byo(map[string]any{"webhook": map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}}), 400, "webhook.url"},
		{"webhook to decimal metadata", byo(map[string]any{"webhook": map[string]any{"url": "http://2852039166/"}}), 400, "webhook.url"},
		{"webhook to link-local v6", byo(map[string]any{"webhook": map[string]any{"url": "http://[fe80::1%25eth0]/h"}}), 400, "webhook.url"},
		{"webhook to alibaba metadata", byo(map[string]any{"webhook": map[string]any{"url": "http://100.100.100.200/latest"}}), 400, "webhook.url"},
		{"webhook to gcp metadata name", byo(map[string]any{"webhook": map[string]any{"url": "http://metadata.google.internal/computeMetadata/v1/"}}), 400, "webhook.url"},
		{"auth_url to metadata", byo(map[string]any{"webhook": map[string]any{"url": "https://a.example/h", "auth_url": "http://[fd00:ec2::254]/token", "auth_token": "id:secret"}}), 400, "webhook.auth_url"},
		{"unknown field", byo(map[string]any{"color": "red"}), 400, "color"},
		{"unknown nested field", byo(map[string]any{"webhook": map[string]any{"url": "https://a.example/h", "secret": "x"}}), 400, "secret"},
		{"wrong type", map[string]any{"origin": "byo_trunk", "name": 5}, 400, "name"},
		{"not json", "{", 400, ""},
		{"array", "[]", 400, ""},
		{"two objects", `{"origin":"byo_trunk"} {}`, 400, ""},
		{"too large", `{"origin":"byo_trunk","name":"` + strings.Repeat("x", 1<<20) + `"}`, 413, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.fails("POST", "/v2/phone-numbers", c.body, c.status, c.param)
		})
	}
	e.t = t
	// Nothing of the failed requests was stored.
	require.Empty(t, e.ok("GET", "/v2/phone-numbers", nil)["phone_numbers"])
}

func TestCreateBYOWithAgent(t *testing.T) {
	e := newEnv(t, nil)
	ag := e.newAgent("Front desk")
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{
		"origin": "byo_trunk", "name": " Sales ", "phone_number": "+1 (415) 555-0199", "agent_id": ag,
		"sip_auth": map[string]any{"allowed_addresses": []string{"203.0.113.7", "10.1.2.3/8", "2001:db8::1", "10.0.0.0/8"}},
	})
	require.Nil(t, m["webhook"], "no webhook was created")
	n := obj(m, "phone_number")
	id := n["phone_number_id"].(string)
	require.True(t, strings.HasPrefix(id, "pn_"))
	require.Equal(t, "team_a", n["team_id"])
	require.Equal(t, "+14155550199", n["phone_number"])
	require.Equal(t, "Sales", n["name"])
	require.Equal(t, ag, n["agent_id"])
	require.Equal(t, "Front desk", n["agent_name"])
	require.Equal(t, "", n["webhook_id"])
	require.Equal(t, "byo_trunk", n["origin"])
	require.Equal(t, "sip.example.test", n["sip_host"])
	require.True(t, strings.HasPrefix(n["inbound_trunk_id"].(string), "tr_"))
	sa := obj(n, "sip_auth")
	require.NotContains(t, sa, "auth_username", "absent when no digest is configured")
	require.Equal(t, []any{"203.0.113.7/32", "10.0.0.0/8", "2001:db8::1/128"}, sa["allowed_addresses"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, n["created_at"])
	require.Equal(t, n["created_at"], n["updated_at"])

	got := e.ok("GET", "/v2/phone-numbers/"+id, nil)
	require.Equal(t, n, got)
	list := e.ok("GET", "/v2/phone-numbers", nil)
	require.Equal(t, []any{n}, list["phone_numbers"])
	require.NotContains(t, list, "next_page_token")

	// The same number again is a conflict, in any formatting.
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "dup", "phone_number": "+1-415-555-0199"},
		http.StatusConflict, "phone_number")
	// Even from another team: a number routes one way only.
	status, _, _ := e.do("POST", "/v2/phone-numbers", "team-b", map[string]any{"origin": "byo_trunk", "name": "dup", "phone_number": "+14155550199"})
	require.Equal(t, http.StatusConflict, status)
	// Another team's agent cannot be named.
	status, raw, _ := e.do("POST", "/v2/phone-numbers", "team-b", map[string]any{"origin": "byo_trunk", "name": "b", "phone_number": "+14155550198", "agent_id": ag})
	require.Equal(t, http.StatusBadRequest, status, raw)
	require.Contains(t, raw, `"param":"agent_id"`)
}

func TestPoolAllocation(t *testing.T) {
	e := newEnv(t, nil)
	require.Equal(t, []string{"+14155550100", "+14155550101", "+12125550100"}, e.svc.Pool(), "normalized, invalid entries dropped")
	prov := func(area string) map[string]any {
		b := map[string]any{"origin": "svc_provisioned", "name": "p"}
		if area != "" {
			b["area_code"] = area
		}
		return b
	}
	n := obj(e.ok("POST", "/v2/phone-numbers", prov("212")), "phone_number")
	require.Equal(t, "+12125550100", n["phone_number"])
	require.Equal(t, "svc_provisioned", n["origin"])
	errObj := e.fails("POST", "/v2/phone-numbers", prov("212"), http.StatusConflict, "area_code")
	require.Equal(t, "pool_exhausted", errObj["code"])
	e.fails("POST", "/v2/phone-numbers", prov("646"), http.StatusConflict, "area_code")

	// A BYO number that happens to be in the pool is not handed out again.
	e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "b", "phone_number": "+14155550100"})
	n = obj(e.ok("POST", "/v2/phone-numbers", prov("")), "phone_number")
	require.Equal(t, "+14155550101", n["phone_number"])
	errObj = e.fails("POST", "/v2/phone-numbers", prov(""), http.StatusConflict, "")
	require.Equal(t, "pool_exhausted", errObj["code"])

	// Deleting a provisioned number frees its DID.
	e.ok("DELETE", "/v2/phone-numbers/"+n["phone_number_id"].(string), nil)
	n = obj(e.ok("POST", "/v2/phone-numbers", prov("415")), "phone_number")
	require.Equal(t, "+14155550101", n["phone_number"])
}
