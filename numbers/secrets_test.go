package numbers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/numbers"
	"switchboard/store"
)

func TestSecretsShownOnceAndSealed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	const (
		password = "Digest-Passw0rd-7f3a9c"
		token    = "oauth-client-credential-91b2e4"
	)
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{
		"origin": "byo_trunk", "name": "Support", "phone_number": "+442071838750",
		"sip_auth": map[string]any{"auth_username": "pbx-1", "auth_password": password, "allowed_addresses": []string{"192.0.2.0/24"}},
		"webhook":  map[string]any{"url": "https://app.example.com/calls", "auth_url": "https://auth.example.com/token", "auth_token": token},
	})
	n, wh := obj(m, "phone_number"), obj(m, "webhook")
	id := n["phone_number_id"].(string)
	secret := wh["dispatch_signing_secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(raw), 24)
	require.True(t, strings.HasPrefix(wh["webhook_id"].(string), "wh_"))
	require.Equal(t, wh["webhook_id"], n["webhook_id"])
	require.Equal(t, map[string]any{"webhook_id": wh["webhook_id"], "name": "Support", "url": "https://app.example.com/calls",
		"auth_url": "https://auth.example.com/token"}, obj(n, "webhook"), "name defaults to the number's name; no secrets")
	require.Equal(t, "pbx-1", obj(n, "sip_auth")["auth_username"])

	// Read endpoints never return the password, the token or the secret.
	bodies := []string{}
	for _, p := range []string{"/v2/phone-numbers/" + id, "/v2/phone-numbers"} {
		_, body, _ := e.do("GET", p, "team-a", nil)
		bodies = append(bodies, body)
	}
	_, body, _ := e.do("PATCH", "/v2/phone-numbers/"+id, "team-a", map[string]any{"name": "Support 2"})
	bodies = append(bodies, body)
	_, createBody, _ := e.do("POST", "/v2/phone-numbers", "team-a", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+442071838751",
		"sip_auth": map[string]any{"auth_username": "u", "auth_password": password}})
	bodies = append(bodies, createBody)
	for _, b := range bodies {
		require.NotContains(t, b, secret)
		require.NotContains(t, b, password)
		require.NotContains(t, b, token)
		require.NotContains(t, b, "dispatch_signing_secret")
		require.NotContains(t, b, "auth_password")
		require.NotContains(t, b, "auth_token")
	}

	// The SIP and webhook layers get them decrypted.
	res, err := e.svc.Resolve(ctx, "+44 20 7183 8750")
	require.NoError(t, err)
	require.Equal(t, id, res.NumberID)
	require.Equal(t, "pbx-1", res.AuthUsername)
	require.Equal(t, password, res.AuthPassword)
	require.NotContains(t, res.String(), password)
	require.Equal(t, "192.0.2.0/24", res.AllowedPrefixes[0].String())
	d, err := e.svc.Webhook(ctx, id)
	require.NoError(t, err)
	require.Equal(t, secret, d.SigningSecret)
	require.Equal(t, token, d.AuthToken)
	require.Equal(t, "https://auth.example.com/token", d.AuthURL)
	s2, err := e.svc.WebhookSecret(ctx, id)
	require.NoError(t, err)
	require.Equal(t, secret, s2)

	// A sealed value does not open in another place (aad binds it).
	rec, err := e.st.Numbers().Get(ctx, id)
	require.NoError(t, err)
	_, err = e.sealer.Open(rec.AuthPasswordEnc, "phone_number:pn_other:auth_password")
	require.Error(t, err)

	// Nothing is stored in plaintext: neither in the database nor its WAL.
	var all []byte
	for _, name := range []string{store.DBFile, store.DBFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(e.dir, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		all = append(all, b...)
	}
	for _, s := range []string{password, token, secret, strings.TrimPrefix(secret, "whsec_")} {
		require.False(t, bytes.Contains(all, []byte(s)), "the database holds %q in plaintext", s)
	}
	require.True(t, bytes.Contains(all, []byte("pbx-1")), "the check reads the real files")
}

func TestLookupErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	_, err := e.svc.Resolve(ctx, "+14155550111")
	require.ErrorIs(t, err, numbers.ErrUnknownNumber)
	_, err = e.svc.Resolve(ctx, "garbage")
	require.ErrorIs(t, err, numbers.ErrUnknownNumber)
	_, err = e.svc.Webhook(ctx, "pn_nope")
	require.ErrorIs(t, err, numbers.ErrUnknownNumber)
	id := obj(e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550111"}),
		"phone_number")["phone_number_id"].(string)
	_, err = e.svc.Webhook(ctx, id)
	require.ErrorIs(t, err, numbers.ErrNoWebhook)
	res, err := e.svc.Resolve(ctx, "+14155550111")
	require.NoError(t, err)
	require.Empty(t, res.AuthPassword)
	require.Empty(t, res.AllowedPrefixes)
}

func TestNoSealer(t *testing.T) {
	e := newEnvWith(t, nil, func(o *numbers.Options) { o.Sealer = nil })
	// Without a sealer a request that carries a secret fails rather than
	// storing it in plaintext, and leaves nothing behind.
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550112",
		"sip_auth": map[string]any{"auth_username": "u", "auth_password": "longenough"}}, 500, "")
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550112",
		"webhook": map[string]any{"url": "https://example.com/h"}}, 500, "")
	require.Empty(t, e.ok("GET", "/v2/phone-numbers", nil)["phone_numbers"])
	// Numbers without secrets need no sealer.
	e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550112"})
}

func TestDefaultWebhookSecret(t *testing.T) {
	a, b := numbers.DefaultWebhookSecret(), numbers.DefaultWebhookSecret()
	require.NotEqual(t, a, b)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	require.NoError(t, err)
	require.Len(t, raw, 32)
}
