package speech

import (
	"encoding/base64"
	"net/http"
	"strings"
	"switchboard/media"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

func wsURL(srv string, path string) string {
	return "ws" + strings.TrimPrefix(srv, "http") + path
}

func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial(url, bearer())
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("dial %s: %s", url, resp.Status)
	}
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// readUtterance reads audio.delta messages until audio.done and returns
// the audio and the number of chunks.
func readUtterance(t *testing.T, c *websocket.Conn) ([]byte, int) {
	t.Helper()
	var audio []byte
	chunks := 0
	for {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		var m wsMessage
		require.NoError(t, c.ReadJSON(&m))
		switch m.Type {
		case "audio.delta":
			b, err := base64.StdEncoding.DecodeString(m.Delta)
			require.NoError(t, err)
			audio = append(audio, b...)
			chunks++
		case "audio.done":
			return audio, chunks
		default:
			t.Fatalf("unexpected message %+v", m)
		}
	}
}

// TestTTSStreamSeveralUtterances sends text in pieces over a real socket:
// audio for the first sentence comes back before the utterance ends, and a
// second utterance follows on the same connection.
func TestTTSStreamSeveralUtterances(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?voice=Ara&language=en&sample_rate=8000"))

	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "Hello there. "}))
	// The first sentence is complete: its audio arrives before text.done.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	var first wsMessage
	require.NoError(t, c.ReadJSON(&first))
	require.Equal(t, "audio.delta", first.Type)
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "How are "}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "you <slow>today</slow>?"}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	rest, _ := readUtterance(t, c)
	b, _ := base64.StdEncoding.DecodeString(first.Delta)
	pcm := media.DecodePCM16LE(nil, append(b, rest...))
	require.Greater(t, float64(len(pcm))/8000, 1.2)
	require.Greater(t, rms(pcm), 500.0)

	// A second utterance on the same connection.
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "Goodbye."}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	audio, chunks := readUtterance(t, c)
	require.GreaterOrEqual(t, chunks, 1)
	require.Greater(t, rms(media.DecodePCM16LE(nil, audio)), 500.0)
}

func TestTTSStreamMulawChunks(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=en&codec=mulaw&sample_rate=8000"))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: strings.Repeat("This is a longer sentence to make several chunks. ", 4)}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	audio, chunks := readUtterance(t, c)
	require.Greater(t, chunks, 1, "audio is sent in chunks")
	require.Greater(t, len(audio), 8000*5, "about 1 byte a sample at 8 kHz")
}

func TestTTSStreamErrorsKeepSocketOpen(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=en"))
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("{not json")))
	var m wsError
	require.NoError(t, c.ReadJSON(&m))
	require.Equal(t, "error", m.Type)
	require.Equal(t, "invalid_message", m.Error.Code)
	// A bad utterance: the error names the tag problem.
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "<shout>hi</shout>"}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	require.NoError(t, c.ReadJSON(&m))
	require.Equal(t, "invalid_request", m.Error.Code)
	require.Contains(t, m.Error.Message, "shout")
	// Still open: a good utterance works.
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "Fine."}))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
	audio, _ := readUtterance(t, c)
	require.NotEmpty(t, audio)
}

func TestTTSStreamValidation(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	for _, tc := range []struct{ query, param string }{
		{"", "language"},
		{"?language=klingon", "language"},
		{"?language=en&voice=bob", "voice"},
		{"?language=en&codec=wav", "codec"},
		{"?language=en&sample_rate=11025", "sample_rate"},
		{"?language=en&speed=2", "speed"},
		{"?language=en&bit_rate=1", "bit_rate"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/tts"+tc.query), bearer())
			require.Error(t, err)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, tc.param, apiError(t, resp).Param)
		})
	}
}

func TestTTSStreamPlainGetIs400(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/tts?language=en", nil)
	req.Header = bearer()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestServiceCloseEndsStreams: Close ends open sockets and waits.
func TestServiceCloseEndsStreams(t *testing.T) {
	srv, svc := newTestServer(t, Options{})
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=en"))
	require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "Hello"}))
	require.NoError(t, svc.Close())
	require.NoError(t, svc.Close(), "idempotent")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break
		}
	}
}
