package realtimetest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"switchboard/realtime"
)

// Options configure a Server.
type Options struct {
	// APIKey, when set, is the bearer key every handshake must carry
	// (otherwise HTTP 401).
	APIKey string
	// RefuseStatus, when set, answers every handshake with that status
	// (for example 503).
	RefuseStatus int
	// AcceptDelay delays every handshake (a slow provider).
	AcceptDelay time.Duration
	// NoPong makes the server ignore pings.
	NoPong bool
	// Silent skips session.created and conversation.created on connect.
	Silent bool
	// Session is the configuration announced in session.created.
	Session realtime.SessionConfig
}

// Server is the scripted upstream.
type Server struct {
	srv     *httptest.Server
	opts    Options
	refuse  atomic.Int64
	delay   atomic.Int64 // handshake delay, ns
	conns   chan *Conn
	closing chan struct{}
	once    sync.Once
	mu      sync.Mutex
	all     []*Conn
	seq     atomic.Uint64
}

// NewServer starts a server on 127.0.0.1 and closes it when t ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts, conns: make(chan *Conn, 16), closing: make(chan struct{})}
	s.refuse.Store(int64(opts.RefuseStatus))
	s.delay.Store(int64(opts.AcceptDelay))
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL returns the ws:// URL of the realtime endpoint.
func (s *Server) URL() string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/v1/realtime"
}

// SetRefuse makes later handshakes fail with status (0 accepts again).
func (s *Server) SetRefuse(status int) { s.refuse.Store(int64(status)) }

// SetAcceptDelay delays later handshakes by d (a provider that takes the
// TCP connection and then hangs); 0 answers at once again.
func (s *Server) SetAcceptDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Accept returns the next connection the server accepted.
func (s *Server) Accept(ctx context.Context) (*Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("realtimetest: no connection: %w", ctx.Err())
	}
}

// Close drops every connection and stops the server; it is idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		// Refuse new connections first: a client that reconnects the
		// moment its connection drops finds the provider gone.
		_ = s.srv.Listener.Close()
		s.mu.Lock()
		close(s.closing)
		for _, c := range s.all {
			c.Drop()
		}
		s.mu.Unlock()
		s.srv.Close()
	})
}

func (s *Server) id(prefix string) string { return fmt.Sprintf("%s_%d", prefix, s.seq.Add(1)) }

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-s.closing:
			return
		case <-r.Context().Done():
			return
		}
	}
	if st := int(s.refuse.Load()); st != 0 {
		http.Error(w, `{"error":{"code":"refused","message":"refused by test server"}}`, st)
		return
	}
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		http.Error(w, `{"error":{"code":"invalid_api_key","message":"bad bearer key"}}`, http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &Conn{
		srv:     s,
		ws:      ws,
		Header:  r.Header.Clone(),
		Query:   r.URL.Query(),
		events:  make(chan realtime.Event, 4096),
		cancels: make(chan string, 16),
		resume:  make(chan struct{}),
		done:    make(chan struct{}),
		session: s.opts.Session.Clone(),
	}
	if c.session.Type == "" {
		c.session.Type = "realtime"
	}
	c.session.Object, c.session.ID = "realtime.session", s.id("sess")
	if m := c.Query.Get("model"); m != "" && c.session.Model == "" {
		c.session.Model = m
	}
	if s.opts.NoPong {
		ws.SetPingHandler(func(string) error { return nil })
	}
	s.mu.Lock()
	select {
	case <-s.closing: // accepted while closing: a gone provider keeps nothing
		s.mu.Unlock()
		c.Drop()
		return
	default:
	}
	s.all = append(s.all, c)
	s.mu.Unlock()
	if !s.opts.Silent {
		_ = c.Send(&realtime.SessionCreated{Session: c.sessionCopy()})
		_ = c.Send(&realtime.ConversationCreated{Conversation: realtime.Conversation{ID: s.id("conv"), Object: "realtime.conversation"}})
	}
	select {
	case s.conns <- c:
	default:
	}
	c.readLoop()
}

// Conn is one accepted client connection.
type Conn struct {
	srv *Server
	ws  *websocket.Conn
	// Header is the handshake request's header.
	Header http.Header
	// Query is the handshake request's query.
	Query url.Values

	wmu     sync.Mutex
	mu      sync.Mutex
	got     []realtime.Event
	session realtime.SessionConfig
	events  chan realtime.Event
	cancels chan string
	stalled atomic.Bool
	resume  chan struct{}
	done    chan struct{}
	dropped atomic.Bool
}

func (c *Conn) sessionCopy() realtime.SessionConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session.Clone()
}

func (c *Conn) readLoop() {
	defer close(c.done)
	defer c.ws.Close()
	for {
		if c.stalled.Load() {
			select {
			case <-c.resume:
			case <-c.srv.closing:
				return
			}
		}
		_, msg, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		e, err := realtime.DecodeLenient(msg)
		if err != nil {
			_ = c.SendError("invalid_json", err.Error(), "")
			continue
		}
		c.mu.Lock()
		c.got = append(c.got, e)
		c.mu.Unlock()
		switch v := e.(type) {
		case *realtime.SessionUpdate:
			c.mu.Lock()
			c.session.Merge(v.Session)
			c.mu.Unlock()
			_ = c.Send(&realtime.SessionUpdated{Session: c.sessionCopy()})
		case *realtime.ResponseCancel:
			select {
			case c.cancels <- v.ResponseID:
			default:
			}
		}
		if _, ok := e.(*realtime.InputAudioBufferAppend); ok {
			continue
		}
		select {
		case c.events <- e:
		default:
		}
	}
}

// Send writes a server event, filling its event_id when empty.
func (c *Conn) Send(e realtime.Event) error {
	if realtime.EventID(e) == "" {
		realtime.SetEventID(e, c.srv.id("event"))
	}
	b, err := realtime.Encode(e)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// SendRaw writes a message as is (for unknown or malformed events).
func (c *Conn) SendRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// SendError sends an error event.
func (c *Conn) SendError(code, message, eventID string) error {
	return c.Send(&realtime.ErrorEvent{Error: realtime.ErrorDetail{
		Type: realtime.ErrorInvalidRequest, Code: code, Message: message, EventID: eventID}})
}

// Expect returns the next client event of type typ (appends are never
// returned; they are counted by AudioBytes), skipping others.
func (c *Conn) Expect(ctx context.Context, typ string) (realtime.Event, error) {
	for {
		select {
		case e := <-c.events:
			if e.EventType() == typ {
				return e, nil
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("realtimetest: no %s: %w", typ, ctx.Err())
		case <-c.done:
			return nil, fmt.Errorf("realtimetest: no %s: connection closed", typ)
		}
	}
}

// Received returns every client event recorded so far, appends included.
func (c *Conn) Received() []realtime.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]realtime.Event(nil), c.got...)
}

// Session returns the session configuration after the client's updates.
func (c *Conn) Session() realtime.SessionConfig { return c.sessionCopy() }

// StopReading stalls the connection: the server stops reading (so TCP
// backpressure reaches the client) and stops answering pings.
func (c *Conn) StopReading() { c.stalled.Store(true) }

// ResumeReading undoes StopReading.
func (c *Conn) ResumeReading() {
	if c.stalled.Swap(false) {
		select {
		case c.resume <- struct{}{}:
		default:
		}
	}
}

// Drop closes the TCP connection abruptly, without a close frame.
func (c *Conn) Drop() {
	c.dropped.Store(true)
	_ = c.ws.NetConn().Close()
	c.ResumeReading()
}

// Done is closed when the connection's reader has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }
