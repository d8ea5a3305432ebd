package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRouteString: a record names where its call went.
func TestRouteString(t *testing.T) {
	require.Equal(t, "agent:ag_1", Route{AgentID: "ag_1"}.String())
	require.Equal(t, "webhook:wh_1", Route{WebhookID: "wh_1", Webhook: &WebhookTarget{ID: "wh_1"}}.String())
	require.Equal(t, "session", Route{Session: []byte("{}")}.String())
	require.Equal(t, "stream", Route{Stream: &StreamTarget{URL: "wss://bot.example/media"}}.String())
	require.Empty(t, Route{}.String())
}
