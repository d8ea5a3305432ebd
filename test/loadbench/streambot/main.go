// Command streambot is the bot of loadbench's stream engine: a WebSocket
// server speaking the Twilio Media Streams protocol as Twilio documents it
// (https://www.twilio.com/docs/voice/media-streams/websocket-messages),
// run as its own process so its CPU is not the appliance's, and written
// from that reference alone (it imports nothing of the appliance). For
// each stream it waits for connected and start, echoes every media
// message of the inbound track straight back as the bot's audio (the same
// µ-law payload, so the caller hears themselves 20 ms at a time) and
// places a mark every -mark of audio, counting the marks that come back;
// stop ends the stream. It prints its listening address on stdout and its
// tallies on stderr when it stops.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	markEvery := flag.Duration("mark", time.Second, "audio between two marks")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "streambot:", err)
		os.Exit(1)
	}
	b := &bot{markFrames: int(*markEvery / (20 * time.Millisecond))}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	fmt.Println(ln.Addr().String())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "streambot:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "streambot: %d streams (%d stopped), %d frames in, %d out, %d marks sent, %d returned, %d protocol errors\n",
		b.streams.Load(), b.stops.Load(), b.in.Load(), b.out.Load(), b.marks.Load(), b.returned.Load(), b.errors.Load())
}

type bot struct {
	markFrames                                       int
	streams, stops, in, out, marks, returned, errors atomic.Int64
}

var upgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}

// message is what the bot reads of Twilio's messages.
type message struct {
	Event          string `json:"event"`
	SequenceNumber string `json:"sequenceNumber"`
	StreamSid      string `json:"streamSid"`
	Start          *struct {
		StreamSid string `json:"streamSid"`
		CallSid   string `json:"callSid"`
	} `json:"start"`
	Media *struct {
		Track   string `json:"track"`
		Chunk   string `json:"chunk"`
		Payload string `json:"payload"`
	} `json:"media"`
	Mark *struct {
		Name string `json:"name"`
	} `json:"mark"`
}

// reply is the bot's media and mark messages.
type reply struct {
	Event     string `json:"event"`
	StreamSid string `json:"streamSid"`
	Media     *struct {
		Payload string `json:"payload"`
	} `json:"media,omitempty"`
	Mark *struct {
		Name string `json:"name"`
	} `json:"mark,omitempty"`
}

func (b *bot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	b.streams.Add(1)
	var (
		m      message
		sid    string
		frames int
		seq    int
	)
	media := &reply{Event: "media", Media: &struct {
		Payload string `json:"payload"`
	}{}}
	mark := &reply{Event: "mark", Mark: &struct {
		Name string `json:"name"`
	}{}}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		m = message{}
		if err := json.Unmarshal(data, &m); err != nil {
			b.errors.Add(1)
			continue
		}
		if m.Event != "connected" {
			seq++
			if m.SequenceNumber != strconv.Itoa(seq) {
				b.errors.Add(1)
			}
		}
		switch m.Event {
		case "start":
			if m.Start == nil || m.Start.StreamSid == "" || m.Start.CallSid == "" {
				b.errors.Add(1)
				return
			}
			sid = m.Start.StreamSid
			media.StreamSid, mark.StreamSid = sid, sid
		case "media":
			if m.Media == nil || m.Media.Track != "inbound" {
				continue
			}
			b.in.Add(1)
			media.Media.Payload = m.Media.Payload
			if err := ws.WriteJSON(media); err != nil {
				return
			}
			b.out.Add(1)
			if frames++; b.markFrames > 0 && frames%b.markFrames == 0 {
				mark.Mark.Name = "m" + strconv.Itoa(frames)
				if err := ws.WriteJSON(mark); err != nil {
					return
				}
				b.marks.Add(1)
			}
		case "mark":
			b.returned.Add(1)
		case "stop":
			b.stops.Add(1)
			return
		case "connected", "dtmf":
		default:
			b.errors.Add(1)
		}
	}
}
