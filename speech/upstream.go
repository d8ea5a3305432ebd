package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/websocket"
)

// upstream is a provider's speech API: a base URL and a bearer key.
type upstream struct {
	base   *url.URL
	key    string
	client *http.Client
	dialer *websocket.Dialer
}

func newUpstream(base, key string, client *http.Client) (*upstream, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("speech upstream url %q: must be an http(s) URL", base)
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &upstream{base: u, key: key, client: client, dialer: websocket.DefaultDialer}, nil
}

func (u *upstream) httpURL(path string) string { return u.base.String() + path }

func (u *upstream) wsURL(path, rawQuery string) string {
	w := *u.base
	if w.Scheme == "https" {
		w.Scheme = "wss"
	} else {
		w.Scheme = "ws"
	}
	w.Path += path
	w.RawQuery = rawQuery
	return w.String()
}

func (u *upstream) header() http.Header {
	h := http.Header{}
	if u.key != "" {
		h.Set("Authorization", "Bearer "+u.key)
	}
	return h
}

func (u *upstream) dial(ctx context.Context, path, rawQuery string) (*websocket.Conn, error) {
	c, resp, err := u.dialer.DialContext(ctx, u.wsURL(path, rawQuery), u.header())
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w: upstream %s answered %s", ErrEngineUnavailable, path, resp.Status)
		}
		return nil, fmt.Errorf("%w: upstream %s: %w", ErrEngineUnavailable, path, err)
	}
	return c, nil
}

// UpstreamError is an error answer of the upstream provider.
type UpstreamError struct {
	Status int
	Body   string
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream answered %d: %s", e.Status, e.Body)
}

// checkResponse turns a non-2xx answer into an *UpstreamError.
func checkResponse(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return &UpstreamError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
}

// wsMessage is the envelope of the streaming messages.
type wsMessage struct {
	Type    string          `json:"type"`
	Delta   string          `json:"delta,omitempty"`
	Message string          `json:"message,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

var errUpstreamClosed = errors.New("upstream closed the stream")
