package numbers_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// TestStreamRoute: a number routes to a bot's stream: its signing secret
// is shown once, its token never, both sealed at rest and opened for the
// calls; the stream is checked field by field (400 naming the field), and
// it excludes agent_id and webhook (400 naming the field that was set).
func TestStreamRoute(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	agentID := e.newAgent("fallback")
	const token = "bot-bearer-token-5e1d"
	m := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "Bot", "phone_number": "+14155550177",
		"stream": map[string]any{"url": "wss://bot.example.com/media", "parameters": map[string]string{"tier": "gold"},
			"auth_token": token, "fallback_agent_id": agentID}})
	n := obj(m, "phone_number")
	id := n["phone_number_id"].(string)
	secret := obj(m, "stream")["signing_secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	require.Equal(t, map[string]any{"url": "wss://bot.example.com/media", "protocol": "twilio", "track": "inbound",
		"parameters": map[string]any{"tier": "gold"}, "fallback_agent_id": agentID}, obj(n, "stream"), "defaults filled, no secrets")

	_, got, _ := e.do("GET", "/v2/phone-numbers/"+id, "team-a", nil)
	require.NotContains(t, got, secret)
	require.NotContains(t, got, token)

	res, err := e.svc.Resolve(ctx, "+14155550177")
	require.NoError(t, err)
	require.NotNil(t, res.Stream)
	require.Equal(t, secret, res.Stream.SigningSecret)
	require.Equal(t, token, res.Stream.AuthToken)
	require.Equal(t, agentID, res.Stream.FallbackAgentID)
	require.Equal(t, map[string]string{"tier": "gold"}, res.Stream.Parameters)
	require.Empty(t, res.AgentID)

	// A PATCH changes the fields it holds and keeps the secret.
	m = e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"stream": map[string]any{"track": "both"}})
	require.Nil(t, m["stream"], "no new secret")
	require.Equal(t, "both", obj(obj(m, "phone_number"), "stream")["track"])
	res, err = e.svc.Resolve(ctx, "+14155550177")
	require.NoError(t, err)
	require.Equal(t, secret, res.Stream.SigningSecret)
	require.Equal(t, token, res.Stream.AuthToken)

	// Nothing secret in plaintext at rest.
	var all []byte
	for _, name := range []string{store.DBFile, store.DBFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(e.dir, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		all = append(all, b...)
	}
	require.True(t, bytes.Contains(all, []byte("bot.example.com")))
	for _, s := range []string{token, strings.TrimPrefix(secret, "whsec_")} {
		require.False(t, bytes.Contains(all, []byte(s)), "the database holds %q in plaintext", s)
	}

	// The routes exclude each other.
	e.fails("PATCH", "/v2/phone-numbers/"+id, map[string]any{"agent_id": agentID}, 400, "agent_id")
	e.fails("PATCH", "/v2/phone-numbers/"+id, map[string]any{"webhook": map[string]any{"url": "https://app.example.com/h"}}, 400, "webhook")
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550178",
		"agent_id": agentID, "stream": map[string]any{"url": "wss://bot.example.com/media"}}, 400, "stream")
	e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550178",
		"webhook": map[string]any{"url": "https://app.example.com/h"}, "stream": map[string]any{"url": "wss://bot.example.com/media"}}, 400, "stream")
	other := e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "agent", "phone_number": "+14155550179", "agent_id": agentID})
	otherID := obj(other, "phone_number")["phone_number_id"].(string)
	e.fails("PATCH", "/v2/phone-numbers/"+otherID, map[string]any{"stream": map[string]any{"url": "wss://bot.example.com/media"}}, 400, "stream")
	// Moving a number from its agent to a stream in one PATCH is fine.
	m = e.ok("PATCH", "/v2/phone-numbers/"+otherID, map[string]any{"agent_id": nil, "stream": map[string]any{"url": "ws://127.0.0.1:9/media"}})
	require.NotEmpty(t, obj(m, "stream")["signing_secret"], "a new stream gets its secret")

	// null removes the stream.
	m = e.ok("PATCH", "/v2/phone-numbers/"+id, map[string]any{"stream": nil})
	require.Nil(t, obj(m, "phone_number")["stream"])
	res, err = e.svc.Resolve(ctx, "+14155550177")
	require.NoError(t, err)
	require.Nil(t, res.Stream)

	// Field by field.
	for _, tc := range []struct {
		stream map[string]any
		param  string
	}{
		{map[string]any{}, "stream.url"},
		{map[string]any{"url": "https://bot.example.com/media"}, "stream.url"},
		{map[string]any{"url": "ws://169.254.169.254/latest"}, "stream.url"},
		{map[string]any{"url": "ws://[fe80::1]/x"}, "stream.url"},
		{map[string]any{"url": "wss://bot.example.com/media", "track": "outbound"}, "stream.track"},
		{map[string]any{"url": "wss://bot.example.com/media", "protocol": "rtp"}, "stream.protocol"},
		{map[string]any{"url": "wss://bot.example.com/media", "parameters": map[string]string{"a\n": "b"}}, "stream.parameters"},
		{map[string]any{"url": "wss://bot.example.com/media", "auth_token": "a\x01b"}, "stream.auth_token"},
		{map[string]any{"url": "wss://bot.example.com/media", "fallback_agent_id": "ag_nope"}, "stream.fallback_agent_id"},
		{map[string]any{"url": "wss://bot.example.com/media", "color": "red"}, "color"},
		{map[string]any{"url": "tcp://bot.example.com", "protocol": "audiosocket"}, "stream.url"},
		{map[string]any{"url": "tcp://bot.example.com:9092", "protocol": "audiosocket", "auth_token": "t"}, "stream.auth_token"},
	} {
		e.fails("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "x", "phone_number": "+14155550180",
			"stream": tc.stream}, 400, tc.param)
	}
	m = e.ok("POST", "/v2/phone-numbers", map[string]any{"origin": "byo_trunk", "name": "as", "phone_number": "+14155550180",
		"stream": map[string]any{"url": "tcp://127.0.0.1:9092", "protocol": "audiosocket"}})
	require.Equal(t, "audiosocket", obj(obj(m, "phone_number"), "stream")["protocol"])

	// The fallback agent is in use: it cannot be deleted.
	e.ok("PATCH", "/v2/phone-numbers/"+otherID, map[string]any{"stream": map[string]any{"fallback_agent_id": agentID}})
	status, raw, _ := e.do("DELETE", "/v1/agents/"+agentID, "team-a", nil)
	require.Equal(t, 409, status, raw)
}
