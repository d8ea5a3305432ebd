// Command streambot is the bot of loadbench's stream engine: a WebSocket
// server speaking the Twilio Media Streams protocol as Twilio documents it
// (https://www.twilio.com/docs/voice/media-streams/websocket-messages),
// run as its own process so its CPU is not the appliance's, and written
// from that reference alone (it imports nothing of the appliance). For
// each stream it waits for connected and start, echoes every media
// message of the inbound track straight back as the bot's audio (the same
// µ-law payload, so the caller hears themselves 20 ms at a time) and
// places a mark every -mark of audio, counting the marks that come back;
// stop ends the stream. It counts as a protocol error a message that is
// not JSON text, a sequenceNumber or a media chunk out of order, a media
// message of another streamSid and an unknown event. It prints its
// listening address on stdout and its tallies on stderr when it stops.
//
// It stands for the customer's machine, so it is written to cost little:
// it reads media messages in place (message.go) and writes its replies
// from reused buffers, allocating nothing per frame.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	markEvery := flag.Duration("mark", time.Second, "audio between two marks")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this loopback address (loadbench -profile)")
	procs := flag.Int("procs", 1, "threads running Go code (GOMAXPROCS): one, like a bot's event loop, spares the machine the wake-ups of idle threads")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	if *pprofAddr != "" {
		pl, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "streambot:", err)
			os.Exit(1)
		}
		go func() { _ = http.Serve(pl, nil) }() // the pprof handlers are on DefaultServeMux
	}
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

func (b *bot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	b.streams.Add(1)
	var (
		m           message
		rbuf, out   []byte
		sid         []byte
		frames, seq int
		chunk       int
	)
	for {
		typ, rd, err := ws.NextReader()
		if err != nil {
			return
		}
		if rbuf, err = readAll(rd, rbuf[:0]); err != nil {
			return
		}
		if typ != websocket.TextMessage || m.parse(rbuf) != nil {
			b.errors.Add(1)
			continue
		}
		if string(m.event) != "connected" {
			seq++
			if !isInt(m.sequenceNumber, seq) {
				b.errors.Add(1)
			}
		}
		switch string(m.event) {
		case "start":
			if !m.hasStart || len(m.startStreamSid) == 0 || len(m.callSid) == 0 {
				b.errors.Add(1)
				return
			}
			sid = append(sid[:0], m.startStreamSid...)
		case "media":
			if !m.hasMedia || string(m.track) != "inbound" {
				continue
			}
			b.in.Add(1)
			if chunk++; !isInt(m.chunk, chunk) || string(m.streamSid) != string(sid) {
				b.errors.Add(1)
			}
			// The caller's audio straight back: the same base64 payload.
			out = append(out[:0], `{"event":"media","streamSid":"`...)
			out = append(out, sid...)
			out = append(out, `","media":{"payload":"`...)
			out = append(out, m.payload...)
			out = append(out, `"}}`...)
			if err := ws.WriteMessage(websocket.TextMessage, out); err != nil {
				return
			}
			b.out.Add(1)
			if frames++; b.markFrames > 0 && frames%b.markFrames == 0 {
				out = append(out[:0], `{"event":"mark","streamSid":"`...)
				out = append(out, sid...)
				out = append(out, `","mark":{"name":"m`...)
				out = strconv.AppendInt(out, int64(frames), 10)
				out = append(out, `"}}`...)
				if err := ws.WriteMessage(websocket.TextMessage, out); err != nil {
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

// readAll appends what r holds to b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// isInt reports whether s is n's decimal digits (Twilio's counters are
// strings).
func isInt(s []byte, n int) bool {
	var buf [20]byte
	return string(strconv.AppendInt(buf[:0], int64(n), 10)) == string(s)
}
