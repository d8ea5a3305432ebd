package agent_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransferTargetModes: a transfer target's mode, briefing, hold audio,
// accept and timeout are checked as the transfer API checks them, each
// refusal naming the target's field; a valid one is stored and read back.
func TestTransferTargetModes(t *testing.T) {
	e := newEnv(t)
	target := func(extra map[string]any) map[string]any {
		tt := map[string]any{"name": "desk", "uri": "sip:desk@pbx.example"}
		for k, v := range extra {
			tt[k] = v
		}
		return map[string]any{"name": "a", "transfer_targets": []any{map[string]any{"name": "ok", "uri": "tel:+14155550100"}, tt}}
	}
	for _, c := range []struct {
		name  string
		extra map[string]any
		param string
	}{
		{"mode", map[string]any{"mode": "blind"}, "transfer_targets[1].mode"},
		{"briefing without a mode", map[string]any{"briefing": "hi"}, "transfer_targets[1].mode"},
		{"briefing of a bridge", map[string]any{"mode": "bridge", "briefing": "hi"}, "transfer_targets[1].briefing"},
		{"accept", map[string]any{"mode": "warm", "accept": "maybe"}, "transfer_targets[1].accept"},
		{"timeout", map[string]any{"mode": "warm", "timeout_s": 500}, "transfer_targets[1].timeout_s"},
		{"hold audio", map[string]any{"mode": "bridge", "hold_audio": "../x.wav"}, "transfer_targets[1].hold_audio"},
		{"replaces of a bridge", map[string]any{"mode": "bridge", "replaces": true}, "transfer_targets[1].replaces"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.fails("POST", "/v1/agents", "team-a", target(c.extra), 400, c.param)
		})
	}
	e.t = t
	a := e.ok("POST", "/v1/agents", target(map[string]any{"mode": "warm", "briefing": "A caller from the website.",
		"accept": "answer", "hold_audio": "music", "timeout_s": 25}))
	got := e.ok("GET", "/v1/agents/"+a["agent_id"].(string), nil)["transfer_targets"].([]any)[1].(map[string]any)
	require.Equal(t, map[string]any{"name": "desk", "uri": "sip:desk@pbx.example", "mode": "warm", "briefing": "A caller from the website.",
		"accept": "answer", "hold_audio": "music", "timeout_s": 25.0}, got)
}
