package agent_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
)

// TestPromptSettings: comfort_prompt and transfer_announcement read as
// their defaults until set, "" turns them off, and comfort_prompt is at
// most 200 characters.
func TestPromptSettings(t *testing.T) {
	e := newEnv(t)
	a := e.ok("POST", "/v1/agents", map[string]any{"name": "Desk"})
	id := a["agent_id"].(string)
	require.Equal(t, agent.DefaultComfortPrompt, a["comfort_prompt"])
	require.Equal(t, agent.DefaultTransferAnnouncement, a["transfer_announcement"])

	a = e.ok("PATCH", "/v1/agents/"+id, map[string]any{"comfort_prompt": "", "transfer_announcement": " Hold on. "})
	require.Equal(t, "", a["comfort_prompt"])
	require.Equal(t, "Hold on.", a["transfer_announcement"])
	require.Equal(t, a, e.ok("GET", "/v1/agents/"+id, nil))

	e.fails("PATCH", "/v1/agents/"+id, "team-a", map[string]any{"comfort_prompt": strings.Repeat("a", agent.MaxComfortPromptLen+1)}, 400, "comfort_prompt")
	e.fails("PATCH", "/v1/agents/"+id, "team-a", map[string]any{"transfer_announcement": strings.Repeat("a", agent.MaxGreetingLen+1)}, 400, "transfer_announcement")
	a = e.ok("PATCH", "/v1/agents/"+id, map[string]any{"comfort_prompt": strings.Repeat("é", agent.MaxComfortPromptLen)})
	require.Len(t, []rune(a["comfort_prompt"].(string)), agent.MaxComfortPromptLen)
}
