package realtimetest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// dial opens a raw client socket, so the stand-in's own wire behaviour is
// what is tested, not the upstream client's.
func dial(t *testing.T, s *Server, key string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	ws, resp, err := websocket.DefaultDialer.Dial(s.URL()+"?model=svc-voice-fast-1.0", h)
	if ws != nil {
		t.Cleanup(func() { ws.Close() })
	}
	return ws, resp, err
}

// next reads the next server event's type and raw fields.
func next(t *testing.T, ws *websocket.Conn) (string, map[string]any) {
	t.Helper()
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, msg, err := ws.ReadMessage()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(msg, &m), "%s", msg)
	typ, _ := m["type"].(string)
	require.NotEmpty(t, m["event_id"], "every server event carries an event_id: %s", msg)
	return typ, m
}

func TestHandshakeChecksKeyAndRefusal(t *testing.T) {
	s := NewServer(t, Options{APIKey: "sk-test"})
	_, resp, err := dial(t, s, "")
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, resp, err = dial(t, s, "sk-wrong")
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	s.SetRefuse(http.StatusServiceUnavailable)
	_, resp, err = dial(t, s, "sk-test")
	require.Error(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	s.SetRefuse(0)
	_, _, err = dial(t, s, "sk-test")
	require.NoError(t, err)
}

func TestSessionLifecycle(t *testing.T) {
	s := NewServer(t, Options{})
	ws, _, err := dial(t, s, "")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := s.Accept(ctx)
	require.NoError(t, err)
	require.Equal(t, "svc-voice-fast-1.0", conn.Query.Get("model"))

	typ, m := next(t, ws)
	require.Equal(t, "session.created", typ)
	sess := m["session"].(map[string]any)
	require.Equal(t, "svc-voice-fast-1.0", sess["model"], "the model asked for is the model announced")
	typ, _ = next(t, ws)
	require.Equal(t, "conversation.created", typ)

	require.NoError(t, ws.WriteJSON(map[string]any{"type": "session.update", "session": map[string]any{
		"type": "realtime", "instructions": "be brief"}}))
	typ, m = next(t, ws)
	require.Equal(t, "session.updated", typ)
	require.Equal(t, "be brief", m["session"].(map[string]any)["instructions"])
	require.NotNil(t, conn.Session().Instructions)
	require.Equal(t, "be brief", *conn.Session().Instructions)
	_, err = conn.Expect(ctx, "session.update")
	require.NoError(t, err)

	// Appends are recorded but never handed to Expect.
	require.NoError(t, ws.WriteJSON(map[string]any{"type": "input_audio_buffer.append", "audio": "AAAA"}))
	require.NoError(t, ws.WriteJSON(map[string]any{"type": "response.create"}))
	_, err = conn.Expect(ctx, "response.create")
	require.NoError(t, err)
	var appends int
	for _, e := range conn.Received() {
		if e.EventType() == "input_audio_buffer.append" {
			appends++
		}
	}
	require.Equal(t, 1, appends)

	// Malformed JSON gets an error event, not a dropped socket.
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte("{not json")))
	typ, m = next(t, ws)
	require.Equal(t, "error", typ)
	require.Equal(t, "invalid_json", m["error"].(map[string]any)["code"])

	conn.Drop()
	select {
	case <-conn.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("reader did not end after Drop")
	}
	_, _, err = ws.ReadMessage()
	require.Error(t, err, "a dropped connection reaches the client")
}

func TestStreamResponseOrderAndCancel(t *testing.T) {
	s := NewServer(t, Options{})
	ws, _, err := dial(t, s, "")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := s.Accept(ctx)
	require.NoError(t, err)
	next(t, ws) // session.created
	next(t, ws) // conversation.created

	res, err := conn.StreamResponse(ctx, Response{Audio: 300 * time.Millisecond, Transcript: "hello"})
	require.NoError(t, err)
	require.False(t, res.Cancelled)
	require.Equal(t, 300*time.Millisecond, res.Sent)
	var types []string
	deltas := 0
	for {
		typ, _ := next(t, ws)
		if typ == "response.output_audio.delta" {
			deltas++
			continue
		}
		types = append(types, typ)
		if typ == "response.done" {
			break
		}
	}
	require.Equal(t, 3, deltas, "100 ms chunks by default")
	require.Equal(t, []string{"response.created", "response.output_item.added", "conversation.item.added",
		"response.content_part.added", "response.output_audio_transcript.delta", "response.output_audio.done",
		"response.output_audio_transcript.done", "response.content_part.done", "response.output_item.done",
		"response.done"}, types)

	// A paced response is cut short by response.cancel, sent once its
	// first audio arrived.
	go func() { // drain the client side so writes never block
		cancelled := false
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if !cancelled && strings.Contains(string(b), `"response.output_audio.delta"`) {
				cancelled = true
				_ = ws.WriteJSON(map[string]any{"type": "response.cancel"})
			}
		}
	}()
	res, err = conn.StreamResponse(ctx, Response{Audio: 3 * time.Second, Paced: true})
	require.NoError(t, err)
	require.True(t, res.Cancelled)
	require.Less(t, res.Sent, time.Second)
}
