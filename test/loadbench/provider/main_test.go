package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"switchboard/realtime"
)

// dialProvider connects a client to the stand-in as the appliance's
// upstream client does.
func dialProvider(t *testing.T, turn time.Duration) *websocket.Conn {
	t.Helper()
	srv := httptest.NewServer(&provider{turn: turn})
	t.Cleanup(srv.Close)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/realtime?model=svc-voice-latest", nil)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	return ws
}

func send(t *testing.T, ws *websocket.Conn, e realtime.Event) {
	t.Helper()
	b, err := realtime.Encode(e)
	require.NoError(t, err)
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, b))
}

func next(t *testing.T, ws *websocket.Conn) realtime.Event {
	t.Helper()
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, msg, err := ws.ReadMessage()
	require.NoError(t, err)
	e, err := realtime.Decode(msg)
	require.NoError(t, err, "the stand-in sent an event the protocol does not know: %s", msg)
	require.NotEmpty(t, realtime.EventID(e), "every server event has an event_id")
	return e
}

// TestProviderEchoesAudioAsResponses: the stand-in speaks the protocol the
// appliance's upstream client expects (session.created naming the model,
// conversation.created, session.updated with the session in force), and
// each append comes back as a delta of the same bytes inside a response
// that ends after -turn of audio with the events that close it, in order.
func TestProviderEchoesAudioAsResponses(t *testing.T) {
	ws := dialProvider(t, 40*time.Millisecond)
	created, ok := next(t, ws).(*realtime.SessionCreated)
	require.True(t, ok)
	require.Equal(t, "svc-voice-latest", created.Session.Model)
	_, ok = next(t, ws).(*realtime.ConversationCreated)
	require.True(t, ok)

	send(t, ws, &realtime.SessionUpdate{Session: realtime.SessionConfig{Type: "realtime",
		Audio: &realtime.AudioConfig{Output: &realtime.AudioOutput{Format: realtime.PCM24k()}}}})
	updated, ok := next(t, ws).(*realtime.SessionUpdated)
	require.True(t, ok)
	require.Equal(t, realtime.FormatPCM, updated.Session.OutputFormat().FormatType())

	// 20 ms of PCM16 at 24 kHz, twice: the second closes a 40 ms turn.
	frame := bytes.Repeat([]byte{1, 2}, 480)
	var types []string
	var heard [][]byte
	for range 2 {
		send(t, ws, &realtime.InputAudioBufferAppend{Audio: frame})
	}
	for len(types) == 0 || types[len(types)-1] != realtime.TypeResponseDone {
		e := next(t, ws)
		types = append(types, e.EventType())
		if d, ok := e.(*realtime.ResponseOutputAudioDelta); ok {
			heard = append(heard, d.Delta)
		}
	}
	require.Equal(t, []string{realtime.TypeResponseCreated, realtime.TypeResponseOutputItemAdded, realtime.TypeResponseContentPartAdded,
		realtime.TypeResponseOutputAudioDelta, realtime.TypeResponseOutputAudioDelta, realtime.TypeResponseOutputAudioDone,
		realtime.TypeResponseContentPartDone, realtime.TypeResponseOutputItemDone, realtime.TypeResponseDone}, types)
	require.Equal(t, [][]byte{frame, frame}, heard)
}

// TestProviderRefusesWhatItDoesNotServe: another path is a JSON 404, and
// a message that is not JSON gets an error event, the session going on.
func TestProviderRefusesWhatItDoesNotServe(t *testing.T) {
	srv := httptest.NewServer(&provider{turn: time.Second})
	defer srv.Close()
	res, err := http.Get(srv.URL + "/v1/other")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)

	ws := dialProvider(t, time.Second)
	next(t, ws)
	next(t, ws)
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte("not json")))
	e, ok := next(t, ws).(*realtime.ErrorEvent)
	require.True(t, ok)
	require.Equal(t, "invalid_json", e.Error.Code)
	send(t, ws, &realtime.ResponseCreate{})
	_, ok = next(t, ws).(*realtime.ResponseCreated)
	require.True(t, ok, "the session goes on after a bad message")
}
