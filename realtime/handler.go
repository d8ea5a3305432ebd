package realtime

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// HandlerOptions configure a Handler. Zero fields take the documented
// defaults.
type HandlerOptions struct {
	// Config returns the initial session configuration for a request, or
	// an error to refuse it with 400. Default: the model= query parameter
	// as Model.
	Config func(r *http.Request) (SessionConfig, error)
	// Guard returns, for a request, a check of each client event before it
	// reaches the session: a non-nil *ErrorDetail refuses the event, which
	// is answered with an error event (the session stays open). Default:
	// none.
	Guard func(r *http.Request) func(Event) *ErrorDetail
	// Observe returns, for a request, a function that sees each server
	// event before it is written (usage accounting). Default: none.
	Observe func(r *http.Request) func(Event)
	// PingInterval is how often the server pings (default 20s).
	PingInterval time.Duration
	// PongTimeout is how long after a ping the handler waits for traffic
	// before it drops the client (default 10s).
	PongTimeout time.Duration
	// WriteTimeout bounds one frame write (default 5s).
	WriteTimeout time.Duration
	// MaxMessageBytes limits one client message (default 4 MiB).
	MaxMessageBytes int64
	// Logger receives per-connection logs; default is disabled.
	Logger *zerolog.Logger
}

func (o HandlerOptions) withDefaults() HandlerOptions {
	if o.Config == nil {
		o.Config = func(r *http.Request) (SessionConfig, error) {
			return SessionConfig{Model: r.URL.Query().Get("model")}, nil
		}
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 20 * time.Second
	}
	if o.PongTimeout <= 0 {
		o.PongTimeout = 10 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 4 << 20
	}
	if o.Logger == nil {
		l := zerolog.Nop()
		o.Logger = &l
	}
	return o
}

// Handler serves an Engine over WebSocket with the protocol's connection
// sequence: after the upgrade the engine's session.created and
// conversation.created go out, then events flow both ways. Client messages
// that are not JSON events are answered with an error event and the session
// stays open. Authentication is left to the caller's middleware.
type Handler struct {
	engine Engine
	opts   HandlerOptions
	up     websocket.Upgrader

	mu     sync.Mutex
	closed bool
	active map[*websocket.Conn]struct{}
	wg     sync.WaitGroup
}

// NewHandler returns a Handler serving engine.
func NewHandler(engine Engine, opts HandlerOptions) *Handler {
	h := &Handler{engine: engine, opts: opts.withDefaults(), active: map[*websocket.Conn]struct{}{}}
	h.up = websocket.Upgrader{
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return h
}

// subprotocol chooses the subprotocol the upgrade answers with, as RFC
// 6455 requires when the client offered any (browsers and the ws library
// fail the handshake otherwise): the first offered one that does not carry
// a client secret (such as "realtime"), else the client secret protocol
// itself, so a client that authenticates by subprotocol alone gets its
// own offer back on the connection it sent it over.
func subprotocol(r *http.Request) http.Header {
	offered := websocket.Subprotocols(r)
	for _, p := range offered {
		if !strings.HasPrefix(p, SecretProtocolPrefix) {
			return http.Header{"Sec-Websocket-Protocol": {p}}
		}
	}
	if len(offered) > 0 {
		return http.Header{"Sec-Websocket-Protocol": {offered[0]}}
	}
	return nil
}

// SecretProtocolPrefix starts the subprotocol that carries a client
// secret: svc-client-secret.<secret>.
const SecretProtocolPrefix = "svc-client-secret."

// ServeHTTP upgrades the request and runs one session until either side
// ends it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cfg, err := h.opts.Config(r)
	if err != nil {
		http.Error(w, `{"error":{"code":"invalid_request","message":`+string(appendString(nil, err.Error()))+`}}`, http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, `{"error":{"code":"unavailable","message":"shutting down"}}`, http.StatusServiceUnavailable)
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()

	conn, err := h.up.Upgrade(w, r, subprotocol(r))
	if err != nil {
		return // the upgrader answered the client
	}
	h.mu.Lock()
	h.active[conn] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.active, conn)
		h.mu.Unlock()
		_ = conn.Close()
	}()
	log := h.opts.Logger.With().Str("remote_addr", r.RemoteAddr).Logger()
	sess, err := h.engine.Open(r.Context(), cfg)
	if err != nil {
		log.Warn().Err(err).Msg("realtime: open session")
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "session unavailable"), time.Now().Add(time.Second))
		return
	}
	var guard func(Event) *ErrorDetail
	if h.opts.Guard != nil {
		guard = h.opts.Guard(r)
	}
	var observe func(Event)
	if h.opts.Observe != nil {
		observe = h.opts.Observe(r)
	}
	h.serve(conn, sess, guard, observe, log)
}

// serve pumps one connection: a reader goroutine feeds the session, this
// goroutine writes the session's events and pings.
func (h *Handler) serve(conn *websocket.Conn, sess Session, guard func(Event) *ErrorDetail, observe func(Event), log zerolog.Logger) {
	o := h.opts
	conn.SetReadLimit(o.MaxMessageBytes)
	deadline := func() time.Time { return time.Now().Add(o.PingInterval + o.PongTimeout) }
	_ = conn.SetReadDeadline(deadline())
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(deadline()) })

	errs := make(chan Event, 16)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer sess.Close()
		ctx := context.Background()
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			_ = conn.SetReadDeadline(deadline())
			e, err := Decode(msg)
			if err != nil {
				select {
				case errs <- DecodeErrorEvent(err):
				default:
				}
				continue
			}
			if a, ok := e.(*InputAudioBufferAppend); ok {
				err = sess.AppendAudio(a.Audio)
			} else if ed := guardOf(guard, e); ed != nil {
				select {
				case errs <- &ErrorEvent{Error: *ed}:
				default:
				}
				continue
			} else {
				err = sess.Send(ctx, e)
			}
			if err != nil {
				return
			}
		}
	}()

	ping := time.NewTicker(o.PingInterval)
	defer ping.Stop()
	var buf []byte
	write := func(e Event) bool {
		var err error
		if buf, err = AppendEncode(buf[:0], e); err != nil {
			log.Warn().Err(err).Str("event", e.EventType()).Msg("realtime: encode")
			return true
		}
		_ = conn.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
		return conn.WriteMessage(websocket.TextMessage, buf) == nil
	}
	events := sess.Events()
	for alive := true; alive; {
		select {
		case e, ok := <-events:
			if !ok {
				alive = false
				break
			}
			if observe != nil {
				observe(e)
			}
			alive = write(e)
		case e := <-errs:
			alive = write(e)
		case <-ping.C:
			alive = conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteTimeout)) == nil
		case <-readDone:
			alive = false
		}
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, closeReason(sess)), time.Now().Add(time.Second))
	_ = conn.Close()
	_ = sess.Close()
	<-readDone
}

// guardOf runs guard on e and fills the refusal's event id.
func guardOf(guard func(Event) *ErrorDetail, e Event) *ErrorDetail {
	if guard == nil {
		return nil
	}
	ed := guard(e)
	if ed != nil && ed.EventID == "" {
		ed.EventID = EventID(e)
	}
	return ed
}

// CloseReasoner is a Session that says why it ended; the Handler sends the
// reason in the close frame (e.g. a phone call's end).
type CloseReasoner interface {
	CloseReason() string
}

// closeReason is sess's close reason cut to the 123 bytes a close frame
// holds (RFC 6455 section 5.5), at a UTF-8 boundary.
func closeReason(sess Session) string {
	cr, ok := sess.(CloseReasoner)
	if !ok {
		return ""
	}
	r := cr.CloseReason()
	if len(r) <= 123 {
		return r
	}
	r = r[:123]
	for len(r) > 0 && !utf8.ValidString(r) {
		r = r[:len(r)-1]
	}
	return r
}

// Close refuses new sessions, drops the active connections and waits for
// their goroutines. It is idempotent.
func (h *Handler) Close() error {
	h.mu.Lock()
	h.closed = true
	for c := range h.active {
		_ = c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}
