package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// dialBot starts the bot (a mark every marks frames) and opens a stream
// to it.
func dialBot(t *testing.T, marks int) (*bot, *websocket.Conn) {
	t.Helper()
	b := &bot{markFrames: marks}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/media", nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return b, c
}

func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(msg)))
}

func receive(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	typ, b, err := c.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, websocket.TextMessage, typ)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return m
}

// TestBotEchoesAndMarks: the messages as Twilio's reference shows them
// (compact, and with white space) are echoed as the bot's media with the
// same payload, a mark follows every markFrames frames, and a stream
// in order counts no protocol error while one out of order does.
func TestBotEchoesAndMarks(t *testing.T) {
	b, c := dialBot(t, 2)
	send(t, c, `{"event":"connected","protocol":"Call","version":"1.0.0"}`)
	send(t, c, `{"event":"start","sequenceNumber":"1","start":{"accountSid":"AC1","streamSid":"MZ1","callSid":"CA1",`+
		`"tracks":["inbound"],"customParameters":{},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}},"streamSid":"MZ1"}`)
	for i := 1; i <= 4; i++ {
		payload := fmt.Sprintf("AAEC%04d", i)
		msg := fmt.Sprintf(`{"event":"media","sequenceNumber":"%d","media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":"%s"},"streamSid":"MZ1"}`,
			i+1, i, 20*i, payload)
		if i%2 == 0 {
			msg = strings.ReplaceAll(strings.ReplaceAll(msg, ",", ", "), ":", ": ")
		}
		send(t, c, msg)
		m := receive(t, c)
		require.Equal(t, map[string]any{"event": "media", "streamSid": "MZ1", "media": map[string]any{"payload": payload}}, m)
		if i%2 == 0 {
			m = receive(t, c)
			require.Equal(t, map[string]any{"event": "mark", "streamSid": "MZ1", "mark": map[string]any{"name": fmt.Sprintf("m%d", i)}}, m)
		}
	}
	send(t, c, `{"event":"mark","sequenceNumber":"6","streamSid":"MZ1","mark":{"name":"m2"}}`)
	send(t, c, `{"event":"dtmf","streamSid":"MZ1","sequenceNumber":"7","dtmf":{"track":"inbound_track","digit":"1"}}`)
	send(t, c, `{"event":"stop","sequenceNumber":"8","streamSid":"MZ1","stop":{"accountSid":"AC1","callSid":"CA1"}}`)
	require.Eventually(t, func() bool { return b.stops.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Zero(t, b.errors.Load())
	require.Equal(t, int64(4), b.in.Load())
	require.Equal(t, int64(4), b.out.Load())
	require.Equal(t, int64(2), b.marks.Load())
	require.Equal(t, int64(1), b.returned.Load())

	// Out of order: a sequenceNumber skipped (each message after it is
	// out of order too: 4 errors), a chunk repeated (1), another stream's
	// sid (1), an unknown event (1), not JSON (1).
	b, c = dialBot(t, 0)
	send(t, c, `{"event":"start","sequenceNumber":"1","start":{"streamSid":"MZ2","callSid":"CA2"},"streamSid":"MZ2"}`)
	send(t, c, `{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"0","payload":"AA=="},"streamSid":"MZ2"}`)
	receive(t, c)
	send(t, c, `{"event":"media","sequenceNumber":"4","media":{"track":"inbound","chunk":"1","timestamp":"20","payload":"AA=="},"streamSid":"MZ2"}`)
	receive(t, c)
	send(t, c, `{"event":"media","sequenceNumber":"5","media":{"track":"inbound","chunk":"3","timestamp":"40","payload":"AA=="},"streamSid":"MZ9"}`)
	receive(t, c)
	send(t, c, `{"event":"nonsense","sequenceNumber":"6"}`)
	send(t, c, `not json`)
	require.Eventually(t, func() bool { return b.errors.Load() == 8 }, 5*time.Second, 10*time.Millisecond)
}

// TestBotReadsMediaInPlace: a media message costs the bot no allocation
// to read.
func TestBotReadsMediaInPlace(t *testing.T) {
	msg := []byte(`{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"AAECAw=="},"streamSid":"MZ1"}`)
	var m message
	require.Zero(t, testing.AllocsPerRun(100, func() { require.NoError(t, m.parse(msg)) }))
	require.Equal(t, "AAECAw==", string(m.payload))
	require.Equal(t, "inbound", string(m.track))
}
