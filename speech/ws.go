package speech

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"switchboard/api/httpx"
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  16 << 10,
	WriteBufferSize: 16 << 10,
	// API clients are not browsers; the API key authenticates them.
	CheckOrigin: func(*http.Request) bool { return true },
}

// upgrade switches the request to a WebSocket (the API server's
// ResponseWriter hands over its connection).
func upgrade(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	return upgrader.Upgrade(w, r, nil)
}

// requireUpgrade answers a plain GET on a WebSocket path.
func requireUpgrade(r *http.Request) error {
	if !websocket.IsWebSocketUpgrade(r) {
		return httpx.BadRequest("", "GET %s is a WebSocket endpoint: send an Upgrade: websocket request", r.URL.Path)
	}
	return nil
}

// wsConn serializes writes to a WebSocket shared by several goroutines.
type wsConn struct {
	*websocket.Conn
	mu sync.Mutex
}

func (c *wsConn) writeJSON(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.WriteJSON(v)
}

func (c *wsConn) writeText(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.WriteMessage(websocket.TextMessage, b)
}

// closeWith sends a close frame and closes the connection.
func (c *wsConn) closeWith(code int, reason string) {
	c.mu.Lock()
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.mu.Unlock()
	_ = c.Close()
}

// wsError is the error message of the streaming protocols.
type wsError struct {
	Type  string      `json:"type"`
	Error wsErrorBody `json:"error"`
}

type wsErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newWSError(code, msg string) wsError {
	return wsError{Type: "error", Error: wsErrorBody{Code: code, Message: msg}}
}

func asError(err error, target **httpx.Error) bool { return errors.As(err, target) }
