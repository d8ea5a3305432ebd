package stream

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// testBot is the far end of a stream in these unit tests: a WebSocket
// server that hands the test each message it receives and sends what the
// test tells it.
type testBot struct {
	srv    *httptest.Server
	conns  chan *botConn
	header chan http.Header
}

type botConn struct {
	c    *websocket.Conn
	msgs chan map[string]any
	raw  chan []byte
	err  chan error
}

func newTestBot(t *testing.T) *testBot {
	t.Helper()
	b := &testBot{conns: make(chan *botConn, 4), header: make(chan http.Header, 4)}
	up := websocket.Upgrader{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.header <- r.Header.Clone()
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		bc := &botConn{c: c, msgs: make(chan map[string]any, 4096), raw: make(chan []byte, 4096), err: make(chan error, 1)}
		b.conns <- bc
		go func() {
			defer close(bc.msgs)
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					bc.err <- err
					return
				}
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					bc.err <- err
					return
				}
				bc.raw <- data
				bc.msgs <- m
			}
		}()
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *testBot) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/media" }

func (b *testBot) accept(t *testing.T) *botConn {
	t.Helper()
	select {
	case c := <-b.conns:
		t.Cleanup(func() { c.c.Close() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not connect")
	}
	return nil
}

// next returns the next message the bot received.
func (c *botConn) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-c.msgs:
		require.True(t, ok, "the stream closed")
		<-c.raw
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message from the stream")
	}
	return nil
}

// nextNot returns the next message whose event is none of skip.
func (c *botConn) nextNot(t *testing.T, skip ...string) map[string]any {
	t.Helper()
	for {
		m := c.next(t)
		if !contains(skip, m["event"].(string)) {
			return m
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (c *botConn) send(t *testing.T, v any) {
	t.Helper()
	var data []byte
	switch x := v.(type) {
	case string:
		data = []byte(x)
	default:
		var err error
		data, err = json.Marshal(v)
		require.NoError(t, err)
	}
	require.NoError(t, c.c.WriteMessage(websocket.TextMessage, data))
}
