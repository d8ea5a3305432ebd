package speech

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

func readType(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	var m map[string]any
	require.NoError(t, c.ReadJSON(&m))
	return m
}

// TestSTTStreamBridge runs the streaming protocol end to end over real
// sockets: client -> this service -> fake provider and back.
func TestSTTStreamBridge(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	c := dialWS(t, wsURL(srv.URL, "/v1/stt?sample_rate=16000&encoding=pcm&interim_results=true&keyterm=Switchboard&multichannel=true&channels=2"))

	require.Equal(t, "transcript.created", readType(t, c)["type"], "created comes before any audio")
	frame := pcmBytes(sine(16000, 300, 0.1, 3000))
	require.NoError(t, c.WriteMessage(websocket.BinaryMessage, frame))
	p := readType(t, c)
	require.Equal(t, "transcript.partial", p["type"])
	require.Equal(t, false, p["is_final"])

	// A parse error is answered and the socket stays open.
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("{oops")))
	e := readType(t, c)
	require.Equal(t, "error", e["type"])
	require.NoError(t, c.WriteJSON(map[string]any{"type": "finalize", "channel": "1"}))
	e = readType(t, c)
	require.Equal(t, "channel must be an integer, not a string", e["error"].(map[string]any)["message"], "in the API's terms")
	require.NoError(t, c.WriteJSON(map[string]any{"type": "finalize", "channel": 5}))
	require.Equal(t, "error", readType(t, c)["type"], "channel out of range")

	require.NoError(t, c.WriteJSON(map[string]any{"type": "Finalize", "channel": 1}))
	fin := readType(t, c)
	require.Equal(t, true, fin["speech_final"])

	require.NoError(t, c.WriteMessage(websocket.BinaryMessage, frame))
	require.Equal(t, "transcript.partial", readType(t, c)["type"])
	require.NoError(t, c.WriteJSON(map[string]any{"type": "audio.done"}))
	done := readType(t, c)
	require.Equal(t, "transcript.done", done["type"])
	require.InDelta(t, 0.2, done["duration"], 0.001, "all audio reached the provider")
	// Then the connection closes normally.
	_, _, err := c.ReadMessage()
	require.True(t, websocket.IsCloseError(err, websocket.CloseNormalClosure), "%v", err)

	f.mu.Lock()
	defer f.mu.Unlock()
	require.Contains(t, f.sttQuery, "keyterm=Switchboard")
	require.Equal(t, 2*len(frame), f.sttAudio)
}

// TestSTTStreamWaitsForTheEngineAfterAudioDone: once the client has sent
// audio.done it has nothing more to send; the idle timeout no longer
// applies, and the engine's transcript.done comes however long its decoder
// takes (it closed the connection as idle, with "transcription stream
// failed", when the last decode outlasted StreamIdleTimeout).
func TestSTTStreamWaitsForTheEngineAfterAudioDone(t *testing.T) {
	f := newFakeProvider(t)
	f.sttDoneDelay = 600 * time.Millisecond
	opts := upstreamOpts(t, f)
	opts.StreamIdleTimeout = 150 * time.Millisecond
	srv, _ := newTestServer(t, opts)
	c := dialWS(t, wsURL(srv.URL, "/v1/stt"))
	require.Equal(t, "transcript.created", readType(t, c)["type"])
	require.NoError(t, c.WriteMessage(websocket.BinaryMessage, pcmBytes(sine(16000, 300, 0.1, 3000))))
	require.Equal(t, "transcript.partial", readType(t, c)["type"])
	require.NoError(t, c.WriteJSON(map[string]any{"type": "audio.done"}))
	require.Equal(t, "transcript.done", readType(t, c)["type"])
	_, _, err := c.ReadMessage()
	require.True(t, websocket.IsCloseError(err, websocket.CloseNormalClosure), "%v", err)
}

// TestSTTStreamEngineErrorCloses: a pipeline error from the engine is
// relayed and the socket closes.
func TestSTTStreamEngineErrorCloses(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	c := dialWS(t, wsURL(srv.URL, "/v1/stt"))
	require.Equal(t, "transcript.created", readType(t, c)["type"])
	require.NoError(t, c.WriteMessage(websocket.BinaryMessage, []byte("boom")))
	m := readType(t, c)
	require.Equal(t, "error", m["type"])
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, _, err := c.ReadMessage()
	require.Error(t, err)
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce)
}

func TestSTTStreamValidation(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	for _, tc := range []struct{ query, param string }{
		{"?sample_rate=11025", "sample_rate"},
		{"?encoding=opus", "encoding"},
		{"?interim_results=maybe", "interim_results"},
		{"?endpointing=5001", "endpointing"},
		{"?endpointing=-1", "endpointing"},
		{"?multichannel=true", "channels"},
		{"?multichannel=true&channels=1", "channels"},
		{"?channels=9", "channels"},
		{"?diarize=2", "diarize"},
		{"?filler_words=x", "filler_words"},
		{"?keyterm=" + string(make([]byte, 0)), "keyterm"},
		{"?keyterm=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "keyterm"},
		{"?smart_turn=1.5", "smart_turn"},
		{"?smart_turn_timeout=100", "smart_turn_timeout"},
		{"?smart_turn=0.5&smart_turn_timeout=0", "smart_turn_timeout"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/stt"+tc.query), bearer())
			require.Error(t, err)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, tc.param, apiError(t, resp).Param)
		})
	}
	t.Run("too many keyterms", func(t *testing.T) {
		q := "?"
		for i := 0; i < 101; i++ {
			q += "keyterm=k&"
		}
		_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/stt"+q), bearer())
		require.Error(t, err)
		require.Equal(t, "keyterm", apiError(t, resp).Param)
	})
}

func TestSTTStreamWithoutEngineIs503(t *testing.T) {
	srv, _ := newTestServer(t, Options{STTEngine: EngineNone})
	_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/stt?sample_rate=8000&encoding=mulaw"), bearer())
	require.Error(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var body struct{ Error struct{ Message string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Contains(t, body.Error.Message, "no speech-to-text engine")
}
