package test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// TestWebhookAndToolAddresses: webhook and tool URLs naming link-local or
// cloud metadata addresses are refused with a 400 naming the field, unless
// webhooks.allow_addresses allows them; loopback stays allowed.
func TestWebhookAndToolAddresses(t *testing.T) {
	number := func(url string) map[string]any {
		return map[string]any{"origin": "svc_provisioned", "name": "hook", "webhook": map[string]any{"url": url}}
	}
	tool := func(url string) map[string]any {
		return map[string]any{"name": "tools", "tools": []any{map[string]any{"name": "lookup", "url": url}}}
	}
	d := startDaemon(t, nil)
	for _, tc := range []struct {
		path, param string
		body        map[string]any
	}{
		{"/v2/phone-numbers", "webhook.url", number("http://169.254.169.254/latest/meta-data/iam")},
		{"/v2/phone-numbers", "webhook.url", number("http://0xa9fea9fe/")},
		{"/v1/agents", "tools[0].url", tool("https://[fd00:ec2::254]/latest")},
	} {
		st, _, raw := d.Do(t, "POST", tc.path, d.OwnerKey, tc.body)
		require.Equal(t, 400, st, "%s", raw)
		code, param, msg := apptest.ErrorOf(t, raw)
		require.Equal(t, "invalid_request", code)
		require.Equal(t, tc.param, param)
		require.Contains(t, msg, "webhooks.allow_addresses")
	}
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, number("http://127.0.0.1:9/hook"), 200)
	d.JSON(t, "POST", "/v1/agents", d.OwnerKey, tool("http://127.0.0.1:9/tool"), 200)

	open := startDaemon(t, map[string]string{"SWITCHBOARD_WEBHOOKS_ALLOW_ADDRESSES": "169.254.169.254/32, fd00:ec2::254"})
	open.JSON(t, "POST", "/v2/phone-numbers", open.OwnerKey, number("http://169.254.169.254/latest/meta-data/iam"), 200)
	open.JSON(t, "POST", "/v1/agents", open.OwnerKey, tool("https://[fd00:ec2::254]/latest"), 200)
	st, _, raw := open.Do(t, "POST", "/v2/phone-numbers", open.OwnerKey, number("http://169.254.170.2/v2/credentials"))
	require.Equal(t, 400, st, "only what the setting names is allowed: %s", raw)
}
