package realtime_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"switchboard/realtime"
	"switchboard/realtime/echo"
	"switchboard/realtime/realtimetest"
)

func tone(ms int, amp float64) []byte {
	b := make([]byte, ms*48)
	for i := range ms * 24 {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(amp*math.Sin(2*math.Pi*300*float64(i)/24000))))
	}
	return b
}

func serveEcho(t *testing.T) (*realtime.Handler, string) {
	t.Helper()
	h := realtime.NewHandler(echo.New(echo.Options{Unpaced: true, Synthesizer: echo.Tone{}}), realtime.HandlerOptions{})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		require.NoError(t, h.Close())
		srv.Close()
	})
	return h, "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/realtime?model=echo-test"
}

func readEvent(t *testing.T, c *websocket.Conn) realtime.Event {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, msg, err := c.ReadMessage()
	require.NoError(t, err)
	e, err := realtime.Decode(msg)
	require.NoError(t, err)
	return e
}

func writeEvent(t *testing.T, c *websocket.Conn, e realtime.Event) {
	t.Helper()
	b, err := realtime.Encode(e)
	require.NoError(t, err)
	require.NoError(t, c.WriteMessage(websocket.TextMessage, b))
}

func TestHandlerServesEchoToGorillaClient(t *testing.T) {
	_, url := serveEcho(t)
	hdr := http.Header{"Sec-Websocket-Protocol": {"realtime, svc-client-secret.abc"}}
	c, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "realtime", resp.Header.Get("Sec-Websocket-Protocol"), "another offered subprotocol is chosen before the secret")

	// The model= query parameter is in force from session.created on.
	created := readEvent(t, c).(*realtime.SessionCreated)
	require.Equal(t, "echo-test", created.Session.Model)
	require.Equal(t, realtime.TypeConversationCreated, readEvent(t, c).EventType())

	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("not json")))
	e := readEvent(t, c).(*realtime.ErrorEvent)
	require.Equal(t, "invalid_event", e.Error.Code)
	// A member of the wrong type: named by its path, with the type it
	// takes, and the client's event_id (the session stays open).
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"session.update","event_id":"bad1","session":{"instructions":5}}`)))
	e = readEvent(t, c).(*realtime.ErrorEvent)
	require.Equal(t, "bad1", e.Error.EventID)
	require.Equal(t, "session.instructions", e.Error.Param)
	require.Equal(t, "session.instructions must be a string, not a number", e.Error.Message)

	writeEvent(t, c, &realtime.SessionUpdate{Header: realtime.Header{EventID: "u1"}, Session: realtime.SessionConfig{Instructions: ptr("Echo.")}})
	require.Equal(t, "Echo.", *readEvent(t, c).(*realtime.SessionUpdated).Session.Instructions)

	in := append(append(tone(300, 0), tone(800, 8000)...), tone(700, 0)...)
	for i := 0; i < len(in); i += 960 {
		require.NoError(t, c.WriteMessage(websocket.TextMessage, realtime.AppendAudioEvent(nil, "", in[i:i+960])))
	}
	var got []byte
	var types []string
	for {
		e := readEvent(t, c)
		types = append(types, e.EventType())
		if d, ok := e.(*realtime.ResponseOutputAudioDelta); ok {
			got = append(got, d.Delta...)
		}
		if e.EventType() == realtime.TypeResponseDone {
			break
		}
	}
	require.Equal(t, realtime.TypeInputAudioBufferSpeechStarted, types[0])
	require.Equal(t, 1600*48, len(got), "prefix-padded utterance from 0 ms to 1600 ms")
	require.Greater(t, realtimetest.Correlation(in[0:1600*48], got), 0.95, "the utterance, at telephone quality")
}

func TestUpstreamClientAgainstEchoOverSocket(t *testing.T) {
	_, url := serveEcho(t)
	up, err := realtime.NewUpstream(realtime.Options{URL: url, AudioQueue: 1000}) // the test feeds faster than real time
	require.NoError(t, err)
	s, err := up.Open(ctxT(t, 5*time.Second), realtime.SessionConfig{Audio: &realtime.AudioConfig{
		Input:  &realtime.AudioInput{Format: &realtime.AudioFormat{Type: realtime.FormatPCMU}},
		Output: &realtime.AudioOutput{Format: &realtime.AudioFormat{Type: realtime.FormatPCMU}}}})
	require.NoError(t, err)
	defer s.Close()
	created := nextOf(t, s, realtime.TypeSessionCreated).(*realtime.SessionCreated)
	require.Equal(t, realtime.FormatPCMU, created.Session.InputFormat().Type, "the configuration is in force from session.created")

	// µ-law: 0xFF is silence, 0x00 is very loud; G.711 passes untouched.
	in := append(append(bytesOf(0xFF, 8*300), bytesOf(0x00, 8*600)...), bytesOf(0xFF, 8*700)...)
	for i := 0; i < len(in); i += 160 {
		require.NoError(t, s.AppendAudio(in[i:i+160]))
	}
	var got []byte
	for {
		e := next(t, s)
		if d, ok := e.(*realtime.ResponseOutputAudioDelta); ok {
			got = append(got, d.Delta...)
		}
		if e.EventType() == realtime.TypeResponseDone {
			break
		}
	}
	require.Equal(t, 1400*8, len(got), "300 ms prefix + 600 ms speech + 500 ms silence")
	require.True(t, bytes.Equal(in[:1400*8], got), "G.711 audio returned untouched")
	require.Zero(t, s.Stats().AudioDropped)
	require.NoError(t, s.Close())
}

func bytesOf(b byte, n int) []byte { return []byte(strings.Repeat(string([]byte{b}), n)) }

func TestHandlerCloseDropsClientsAndRefusesNewOnes(t *testing.T) {
	h, url := serveEcho(t)
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	defer c.Close()
	readEvent(t, c)
	require.NoError(t, h.Close())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			break
		}
	}
	_, resp, err := websocket.DefaultDialer.Dial(url, nil)
	require.Error(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// TestHandlerEchoesTheOnlyOfferedSubprotocol: a client that offers only
// the client secret protocol (a browser authenticating by subprotocol)
// gets it back, as RFC 6455 requires; without an offer there is none.
func TestHandlerEchoesTheOnlyOfferedSubprotocol(t *testing.T) {
	_, url := serveEcho(t)
	d := websocket.Dialer{Subprotocols: []string{"svc-client-secret.abc"}}
	c, resp, err := d.Dial(url, nil)
	require.NoError(t, err)
	require.Equal(t, "svc-client-secret.abc", resp.Header.Get("Sec-Websocket-Protocol"))
	require.Equal(t, "svc-client-secret.abc", c.Subprotocol())
	c.Close()
	c, resp, err = websocket.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	require.Empty(t, resp.Header.Get("Sec-Websocket-Protocol"))
	c.Close()
}
