package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// ToolRequest is the body of a custom tool call: the model's function call.
type ToolRequest struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// PhoneCallID is the phone call the tool runs in.
	PhoneCallID string `json:"phone_call_id,omitempty"`
	// Variables are the phone call's variables (caller.number,
	// sip.X-Account-Id, variables.plan, …; see docs/variables.md).
	Variables map[string]string `json:"variables,omitempty"`
}

// ToolClient calls custom function tools: one POST per call, signed like a
// webhook (Standard Webhooks, with the appliance's tool signing secret),
// never retried (a tool may not be idempotent). The response body, up to
// MaxBytes, is the function's output.
type ToolClient struct {
	wh        *standardwebhooks.Webhook
	client    *http.Client
	maxBytes  int64
	userAgent string
}

// ToolOption configures a ToolClient.
type ToolOption func(*toolConfig)

type toolConfig struct{ addrs AddressPolicy }

// WithToolAddresses sets the addresses tool requests may connect to
// (default: the zero AddressPolicy, no link-local or metadata address).
func WithToolAddresses(p AddressPolicy) ToolOption { return func(c *toolConfig) { c.addrs = p } }

// NewToolClient returns a tool client signing with secret (whsec_…).
func NewToolClient(secret string, opts ...ToolOption) (*ToolClient, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, fmt.Errorf("tool signing secret: %w", err)
	}
	var cfg toolConfig
	for _, o := range opts {
		o(&cfg)
	}
	return &ToolClient{wh: wh, client: &http.Client{Transport: cfg.addrs.Transport(), CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, maxBytes: 64 << 10, userAgent: "switchboard-tools/1"}, nil
}

// Close drops the client's idle connections.
func (c *ToolClient) Close() error {
	c.client.CloseIdleConnections()
	return nil
}

// Call POSTs req to url and returns the response body. ctx bounds it (the
// tool's timeout). A non-2xx answer is an error naming the status.
func (c *ToolClient) Call(ctx context.Context, url string, req ToolRequest) (string, error) {
	if len(req.Arguments) == 0 || !json.Valid(req.Arguments) {
		req.Arguments = json.RawMessage("{}")
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	status, body, err := c.post(ctx, url, NewEventID(), payload)
	if err != nil {
		return "", fmt.Errorf("tool %s: %w", req.Name, err)
	}
	if status/100 != 2 {
		return "", fmt.Errorf("tool %s answered %d %s", req.Name, status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// post sends payload to url signed with id, once, and returns the status
// and the body (at most maxBytes of it).
func (c *ToolClient) post(ctx context.Context, url, id string, payload []byte) (int, []byte, error) {
	at := time.Now()
	sig, err := c.wh.Sign(id, at, payload)
	if err != nil {
		return 0, nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	setSigned(hr.Header, c.userAgent, id, at, sig)
	resp, err := c.client.Do(hr)
	if err != nil {
		return 0, nil, scrubURLError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes))
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, body, nil
}
