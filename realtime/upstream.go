package realtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// Options configures the upstream client. Zero fields take the defaults
// documented on each field.
type Options struct {
	// URL is the provider's realtime endpoint, e.g.
	// wss://api.example.com/v1/realtime (config upstream.url). Required.
	URL string
	// Model is added as the model= query parameter when set and the URL
	// has none.
	Model string
	// APIKeyEnv names the environment variable holding the bearer key. When
	// empty no Authorization header is sent; when set and the variable is
	// empty, Open fails.
	APIKeyEnv string
	// Header holds extra handshake headers.
	Header http.Header
	// ConnectTimeout bounds the TCP+TLS+WebSocket handshake (default 10s).
	ConnectTimeout time.Duration
	// PingInterval is how often a ping is sent (default
	// DefaultPingInterval).
	PingInterval time.Duration
	// PongTimeout is how long past a ping interval without any traffic
	// the session waits before it declares the peer gone (default
	// DefaultPongTimeout).
	PongTimeout time.Duration
	// WriteTimeout bounds one frame write (default 5s); a peer that stops
	// reading ends the session after it.
	WriteTimeout time.Duration
	// AudioQueue is how many append frames may wait for the writer before
	// the oldest is dropped (default 50: one second of 20 ms frames).
	AudioQueue int
	// ControlQueue is how many other client events may wait (default 64).
	ControlQueue int
	// EventBuffer is the capacity of the Events channel (default 256).
	EventBuffer int
	// SessionShape is where a session.update sent to the provider puts
	// the voice and the turn detection: ShapeNested (the default:
	// audio.output.voice, audio.input.turn_detection, as the OpenAI GA
	// API takes them) or ShapeTopLevel (voice, turn_detection, as the
	// spec places them). Config upstream.session_fields.
	SessionShape SessionShape
	// Logger receives connection-level logs; default is disabled.
	Logger *zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PongTimeout <= 0 {
		o.PongTimeout = DefaultPongTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.AudioQueue <= 0 {
		o.AudioQueue = 50
	}
	if o.ControlQueue <= 0 {
		o.ControlQueue = 64
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 256
	}
	if o.SessionShape != ShapeTopLevel {
		o.SessionShape = ShapeNested
	}
	if o.Logger == nil {
		l := zerolog.Nop()
		o.Logger = &l
	}
	return o
}

// A provider that vanishes without closing its socket (a host gone, a
// path cut) is found by the read deadline: no traffic at all, not even a
// pong, for PingInterval+PongTimeout. A call is silent for that long before
// its fallback can start, so the defaults keep it to 3 s: a ping a second
// costs a few bytes per call, and 2 s past a ping is far beyond the round
// trip of a live provider.
const (
	DefaultPingInterval = time.Second
	DefaultPongTimeout  = 2 * time.Second
)

var (
	errNoURL    = errors.New("upstream url is required")
	errBadURL   = errors.New("upstream url must be ws:// or wss://")
	errNoAPIKey = errors.New("api key environment variable is empty")
)

// HandshakeError is returned by Open when the server answered the upgrade
// with an HTTP status instead of 101 (401 bad key, 503 overloaded, …).
type HandshakeError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Body is the start of the response body.
	Body string
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("realtime handshake refused: HTTP %d: %s", e.StatusCode, e.Body)
}

// writeBuffers lends the sessions' connections their write buffer for
// the time of one message: a session writes a frame every 20 ms, so a few
// buffers serve every call instead of one per call (4 KiB each).
var writeBuffers = &sync.Pool{}

// Upstream is the Engine that opens sessions with a remote provider over
// WebSocket.
type Upstream struct {
	opts Options
	url  string
}

var _ Engine = (*Upstream)(nil)

// NewUpstream checks opts and returns the upstream engine.
func NewUpstream(opts Options) (*Upstream, error) {
	opts = opts.withDefaults()
	if opts.URL == "" {
		return nil, errNoURL
	}
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("upstream url: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, fmt.Errorf("%w: %q", errBadURL, opts.URL)
	}
	if opts.Model != "" && u.Query().Get("model") == "" {
		q := u.Query()
		q.Set("model", opts.Model)
		u.RawQuery = q.Encode()
	}
	return &Upstream{opts: opts, url: u.String()}, nil
}

// URL returns the URL Open dials, model query included.
func (u *Upstream) URL() string { return u.url }

// sessionURL is the URL of one session: the session's model as model=
// when the configuration names none (upstream.model), and its reasoning
// effort as reasoning.effort=, the spec's query parameters.
func (u *Upstream) sessionURL(cfg SessionConfig) string {
	if cfg.Model == "" && cfg.Reasoning == nil {
		return u.url
	}
	pu, err := url.Parse(u.url)
	if err != nil {
		return u.url
	}
	q := pu.Query()
	if cfg.Model != "" && q.Get("model") == "" {
		q.Set("model", cfg.Model)
	}
	if cfg.Reasoning != nil && cfg.Reasoning.Effort != "" {
		q.Set("reasoning.effort", cfg.Reasoning.Effort)
	}
	pu.RawQuery = q.Encode()
	return pu.String()
}

// Open dials the provider, starts the session's reader and writer, and queues
// a session.update with cfg when cfg is not zero. The session's first event
// is then the provider's session.created carrying the session in force
// once cfg applied (the provider's session.updated that answers it is
// folded into it), as the echo engine does.
func (u *Upstream) Open(ctx context.Context, cfg SessionConfig) (Session, error) {
	h := http.Header{}
	for k, v := range u.opts.Header {
		h[k] = append([]string(nil), v...)
	}
	if u.opts.APIKeyEnv != "" {
		key := os.Getenv(u.opts.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("open realtime session: %w: %s", errNoAPIKey, u.opts.APIKeyEnv)
		}
		h.Set("Authorization", "Bearer "+key)
	}
	dialCtx, cancel := context.WithTimeout(ctx, u.opts.ConnectTimeout)
	defer cancel()
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: u.opts.ConnectTimeout,
		WriteBufferPool:  writeBuffers,
	}
	conn, resp, err := d.DialContext(dialCtx, u.sessionURL(cfg), h)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			_ = resp.Body.Close()
			return nil, fmt.Errorf("open realtime session: %w", &HandshakeError{StatusCode: resp.StatusCode, Body: string(body)})
		}
		return nil, fmt.Errorf("open realtime session: %w", err)
	}
	s := newWSSession(conn, u.opts, !cfg.IsZero())
	if !cfg.IsZero() {
		if cfg.Type == "" {
			cfg.Type = "realtime"
		}
		if err := s.Send(ctx, &SessionUpdate{Session: cfg}); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	return s, nil
}
