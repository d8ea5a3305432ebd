package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"switchboard/agent"
	"switchboard/auth"
	"switchboard/conversation"
	"switchboard/webhook"
)

// ToolSecretFile holds the secret custom tool calls are signed with, made
// with mode 0600 on first start unless SWITCHBOARD_TOOLS_SECRET is set.
const ToolSecretFile = "tools.secret"

// loadToolSecret returns the tool signing secret: the configured one, or
// the one in the data directory, created on first start.
func loadToolSecret(dataDir, configured string) (secret string, created bool, err error) {
	if configured != "" {
		return configured, false, auth.ValidateWebhookSecret(configured)
	}
	path := filepath.Join(dataDir, ToolSecretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("tool secret: %w", err)
	}
	secret = auth.NewWebhookSecret()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("tool secret: %w", err)
	}
	_, werr := f.WriteString(secret + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return "", false, fmt.Errorf("tool secret: %w", err)
	}
	return secret, true, nil
}

// toolCaller runs agents' custom tools over HTTP (conversation.ToolCaller).
type toolCaller struct{ c *webhook.ToolClient }

func (t toolCaller) CallTool(ctx context.Context, tool agent.Tool, c conversation.ToolCall) (string, error) {
	return t.c.Call(ctx, tool.URL, webhook.ToolRequest{CallID: c.ID, Name: tool.Name, Arguments: json.RawMessage(c.Arguments),
		PhoneCallID: c.PhoneCallID, Variables: c.Variables})
}
