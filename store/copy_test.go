package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCopyFromSQLite moves a node's SQLite records into a fresh store (the
// PostgreSQL one in the PostgreSQL run): every table, unchanged, once.
func TestCopyFromSQLite(t *testing.T) {
	ctx := context.Background()
	src, err := OpenSQLite(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { src.Close() })
	now := time.Unix(1_700_000_000, 123000).UTC()
	require.NoError(t, src.Agents().Create(ctx, &Agent{ID: "ag_1", TeamID: "default", Name: "a", Doc: []byte(`{"x":1}`), CreateTime: now, UpdateTime: now}))
	require.NoError(t, src.Numbers().Create(ctx, &PhoneNumber{ID: "pn_1", TeamID: "default", PhoneNumber: "+14155550100", Name: "n",
		Origin: "byo_trunk", AgentID: "ag_1", AllowedAddresses: []string{"10.0.0.0/8"}, InboundTrunkID: "tr", CreateTime: now, UpdateTime: now},
		&Webhook{ID: "wh_1", PhoneNumberID: "pn_1", Name: "w", URL: "https://example.invalid/h", SigningSecretEnc: "sealed", CreateTime: now}))
	require.NoError(t, src.Keys().Create(ctx, &APIKey{ID: "k1", TeamID: "default", UserID: "u", Name: "k", Hash: "h1", Redacted: "r",
		ACLs: []string{"api-key:endpoint:*"}, Disabled: true, Management: true, CreateTime: now, ModifyTime: now}))
	require.NoError(t, src.Audit().Append(ctx, &AuditEvent{ID: "ev1", TeamID: "default", UserID: "u", Action: "a", Resource: "r", Description: "d", Time: now}))
	in := testCall(1, now)
	in.NodeID = "sb1"
	require.NoError(t, src.Calls().Create(ctx, in))

	dst := openTest(t, t.TempDir())
	counts, err := dst.CopyFrom(ctx, src)
	require.NoError(t, err)
	require.Equal(t, 1, counts["agents"])
	require.Equal(t, 1, counts["phone_numbers"])
	require.Equal(t, 1, counts["webhooks"])
	require.Equal(t, 1, counts["api_keys"])
	require.Equal(t, 1, counts["calls"])

	k, err := dst.Keys().ByHash(ctx, "h1")
	require.NoError(t, err)
	require.True(t, k.Disabled)
	require.True(t, k.Management)
	require.Equal(t, []string{"api-key:endpoint:*"}, k.ACLs)
	n, w, err := dst.Numbers().Route(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, "ag_1", n.AgentID)
	require.Equal(t, "sealed", w.SigningSecretEnc)
	got, err := dst.Calls().Get(ctx, in.ID)
	require.NoError(t, err)
	require.Equal(t, in, got)
	evs, _, err := dst.Audit().List(ctx, "default", AuditQuery{})
	require.NoError(t, err)
	require.Len(t, evs, 1)

	_, err = dst.CopyFrom(ctx, src)
	require.ErrorIs(t, err, ErrNotEmpty, "a second copy is refused, not doubled")
}
