package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCLIAgents(t *testing.T) {
	env := cliDaemon(t)
	instr := filepath.Join(t.TempDir(), "prompt.txt")
	require.NoError(t, os.WriteFile(instr, []byte("You answer the phone for Acme.\nBe brief and friendly."), 0o600))

	out, errs, code := sb(t, env, "agents", "create", "--name", "Front desk", "--voice", "Rex", "--language", "en-us",
		"--greeting", "Hello, Acme here.", "--instructions-file", instr)
	require.Equal(t, 0, code, errs)
	for _, s := range []string{"VOICE", "Front desk", "rex", "svc-voice-latest", "en-US", "Hello, Acme here.", "You answer the phone for Acme. Be brief…"} {
		require.Contains(t, out, s)
	}
	a := sbJSON(t, env, "agents", "create", "--name", "Second", "--model", "svc-voice-fast-1.0")
	id := a["agent_id"].(string)
	require.Equal(t, "eve", a["voice"])
	require.Equal(t, "svc-voice-fast-1.0", a["model"])

	list := sbJSON(t, env, "agents", "list")
	require.Len(t, list["agents"], 2)
	out, _, code = sb(t, env, "agents", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Second")

	up := sbJSON(t, env, "agents", "update", id, "--voice", "ara", "--greeting", "Hi")
	require.Equal(t, "ara", up["voice"])
	require.Equal(t, "Second", up["name"])
	up = sbJSON(t, env, "agents", "update", id, "--greeting", "")
	require.NotContains(t, up, "greeting")
	require.Equal(t, up, sbJSON(t, env, "agents", "get", id))

	errs = sbFails(t, env, "agents", "create", "--name", "Bad", "--voice", "bob")
	require.Contains(t, errs, "400")
	require.Contains(t, errs, "param voice")
	require.Contains(t, sbFails(t, env, "agents", "create"), "param name")
	require.Contains(t, sbFails(t, env, "agents", "update", id), "nothing to change")

	out, _, code = sb(t, env, "agents", "delete", id)
	require.Equal(t, 0, code)
	require.Contains(t, out, "deleted agent "+id)
	require.Contains(t, sbFails(t, env, "agents", "get", id), "404")
	require.Contains(t, sbFails(t, env, "agents", "delete", id), "404")
}
