package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRouteReadsNumberAndWebhookTogether pins the one read an INVITE
// makes: the number with its webhook, or with none, or ErrNotFound.
func TestRouteReadsNumberAndWebhookTogether(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, s.Agents().Create(ctx, &Agent{ID: "ag_1", TeamID: "t1", Name: "a", Doc: []byte(`{}`), CreateTime: now, UpdateTime: now}))
	require.NoError(t, s.Numbers().Create(ctx, &PhoneNumber{ID: "pn_a", TeamID: "t1", PhoneNumber: "+14155550100", Name: "a",
		Origin: "byo_trunk", AgentID: "ag_1", InboundTrunkID: "tr", CreateTime: now, UpdateTime: now}, nil))
	require.NoError(t, s.Numbers().Create(ctx, &PhoneNumber{ID: "pn_w", TeamID: "t1", PhoneNumber: "+14155550101", Name: "w",
		Origin: "byo_trunk", WebhookID: "wh_1", InboundTrunkID: "tr", CreateTime: now, UpdateTime: now},
		&Webhook{ID: "wh_1", PhoneNumberID: "pn_w", Name: "hook", URL: "https://example.test/hook", AuthURL: "https://example.test/token",
			AuthTokenEnc: "tok", SigningSecretEnc: "sec", CreateTime: now}))

	n, w, err := s.Numbers().Route(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, "ag_1", n.AgentID)
	require.Nil(t, w)
	require.Equal(t, OutboundTrunk{}, n.Outbound)

	// The outbound trunk is read with the number and written by Update.
	n.Outbound = OutboundTrunk{URI: "sip:carrier.test:5060;transport=tcp", Username: "acct", PasswordEnc: "sealed", CallerID: "+14155550100"}
	require.NoError(t, s.Numbers().Update(ctx, n))
	n, _, err = s.Numbers().Route(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, OutboundTrunk{URI: "sip:carrier.test:5060;transport=tcp", Username: "acct", PasswordEnc: "sealed", CallerID: "+14155550100"}, n.Outbound)

	// So is the context URL and its timeout.
	require.Empty(t, n.ContextURL)
	n.ContextURL, n.ContextTimeoutMS = "https://crm.example.test/context", 800
	require.NoError(t, s.Numbers().Update(ctx, n))
	n, _, err = s.Numbers().Route(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, "https://crm.example.test/context", n.ContextURL)
	require.Equal(t, 800, n.ContextTimeoutMS)

	n, w, err = s.Numbers().Route(ctx, "+14155550101")
	require.NoError(t, err)
	require.Equal(t, "wh_1", n.WebhookID)
	require.Equal(t, &Webhook{ID: "wh_1", PhoneNumberID: "pn_w", Name: "hook", URL: "https://example.test/hook",
		AuthURL: "https://example.test/token", AuthTokenEnc: "tok", SigningSecretEnc: "sec", CreateTime: now}, w)

	_, _, err = s.Numbers().Route(ctx, "+14155550199")
	require.ErrorIs(t, err, ErrNotFound)
}

// TestNumberStreamRoundTrips: a number's stream is written by Create and
// Update and read by Route with the number; its fallback agent counts as
// a use of the agent.
func TestNumberStreamRoundTrips(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, s.Agents().Create(ctx, &Agent{ID: "ag_1", TeamID: "t1", Name: "a", Doc: []byte(`{}`), CreateTime: now, UpdateTime: now}))
	st := NumberStream{URL: "wss://bot.example/media", Protocol: "twilio", Track: "both", Parameters: map[string]string{"tier": "gold"},
		FallbackAgentID: "ag_1", AuthTokenEnc: "tok", SecretEnc: "sec"}
	require.NoError(t, s.Numbers().Create(ctx, &PhoneNumber{ID: "pn_s", TeamID: "t1", PhoneNumber: "+14155550102", Name: "s",
		Origin: "byo_trunk", InboundTrunkID: "tr", Stream: st, CreateTime: now, UpdateTime: now}, nil))
	n, w, err := s.Numbers().Route(ctx, "+14155550102")
	require.NoError(t, err)
	require.Nil(t, w)
	require.Equal(t, st, n.Stream)
	count, err := s.Numbers().CountByAgent(ctx, "ag_1")
	require.NoError(t, err)
	require.Equal(t, 1, count)

	n.Stream = NumberStream{}
	require.NoError(t, s.Numbers().Update(ctx, n))
	n, err = s.Numbers().Get(ctx, "pn_s")
	require.NoError(t, err)
	require.Equal(t, NumberStream{}, n.Stream)
}
