package stream

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// The per-frame code of a stream: each call sends a media message to its
// bot and reads one back every 20 ms (500 calls: 25,000 of each a second).
//
//	go test -run '^$' -bench 'Frame|BotMessage' -benchmem ./stream/

// botMedia is a bot's media message as pipecat writes it (json.dumps).
var botMedia = []byte(`{"event": "media", "streamSid": "MZ0123456789abcdef0123456789abcdef", "media": {"payload": "` +
	base64.StdEncoding.EncodeToString(ramp(160, 0)) + `"}}`)

// BenchmarkBotMessage decodes a bot's media message: the fast path, and
// encoding/json (what every message cost before it).
func BenchmarkBotMessage(b *testing.B) {
	b.Run("decode", func(b *testing.B) {
		var v twilioView
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeTwilio(botMedia, &v); err != nil || !v.hasMedia {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in twilioIn
			if err := json.Unmarshal(botMedia, &in); err != nil || in.Media == nil {
				b.Fatal(err)
			}
		}
	})
}

// echoPeer is a bot for the benchmark: it answers every message with
// botMedia.
func echoPeer(b *testing.B) string {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if _, _, err := c.NextReader(); err != nil {
				return
			}
			if err := c.WriteMessage(websocket.TextMessage, botMedia); err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// BenchmarkFrame is one frame each way on a Twilio stream over loopback:
// the caller's frame written as a media message (the writer goroutine's
// work) and the bot's read back (the reader's), syscalls included.
func BenchmarkFrame(b *testing.B) {
	url := echoPeer(b)
	d := newDialer(Options{}.withDefaults())
	conn, _, err := d.ws.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	w := newTwilioWire(conn, startInfo{streamSid: "MZ0123456789abcdef0123456789abcdef"}, Options{}.withDefaults())
	defer w.close("")
	frame := ramp(160, 0)
	var m outMsg
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m = outMsg{kind: outMedia, track: trackInbound, at: int64(20 * i), buf: getFrame(frame)}
		err := w.write(&m)
		putFrame(m.buf)
		if err != nil {
			b.Fatal(err)
		}
		in, err := w.read()
		if err != nil || in.kind != inMedia || len(in.payload) != 160 {
			b.Fatalf("read %v %v", in, err)
		}
	}
}
