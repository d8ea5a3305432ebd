// Command provider is the model provider stand-in of loadbench's upstream
// engine: a realtime WebSocket endpoint (GET /v1/realtime) run as its own
// process, so its CPU is not the appliance's. It speaks the realtime event
// protocol as a provider does: session.created and conversation.created on
// connect, session.updated for every session.update (the session in force,
// its audio formats included), an empty response for a response.create, and
// for the caller's audio an answer in real time: every
// input_audio_buffer.append comes straight back as a
// response.output_audio.delta of the same bytes (the session's format:
// audio/pcm at 24 kHz or audio/pcmu), inside a response that lasts
// -turn of audio (response.created, output_item.added, content_part.added,
// the deltas, then output_audio.done, content_part.done, output_item.done
// and response.done). It prints its listening address on stdout.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"switchboard/realtime"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	turn := flag.Duration("turn", 5*time.Second, "audio per response before it is done and the next one starts")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
	p := &provider{turn: *turn}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	fmt.Println(ln.Addr().String())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "provider: %d sessions, %d appends in, %d deltas out\n", p.sessions.Load(), p.appends.Load(), p.deltas.Load())
}

type provider struct {
	turn                      time.Duration
	seq                       atomic.Uint64
	sessions, appends, deltas atomic.Int64
}

func (p *provider) id(prefix string) string {
	return prefix + "_" + strconv.FormatUint(p.seq.Add(1), 36)
}

var upgrader = websocket.Upgrader{ReadBufferSize: 8192, WriteBufferSize: 8192}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/realtime" {
		http.Error(w, `{"error":{"code":"not_found","message":"no such route"}}`, http.StatusNotFound)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	p.sessions.Add(1)
	s := &session{p: p, ws: ws, cfg: realtime.SessionConfig{Type: "realtime", Object: "realtime.session", ID: p.id("sess"),
		Model: r.URL.Query().Get("model"), OutputModalities: []string{"audio"},
		Audio: &realtime.AudioConfig{Input: &realtime.AudioInput{Format: realtime.PCM24k()}, Output: &realtime.AudioOutput{Format: realtime.PCM24k()}}}}
	s.run()
}

// session is one connection: its reader answers every event in order.
type session struct {
	p   *provider
	ws  *websocket.Conn
	wmu sync.Mutex
	cfg realtime.SessionConfig

	// the response in progress (empty: none)
	respID, itemID string
	respBytes      int
}

func (s *session) send(e realtime.Event) error {
	if realtime.EventID(e) == "" {
		realtime.SetEventID(e, s.p.id("event"))
	}
	b, err := realtime.Encode(e)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return s.ws.WriteMessage(websocket.TextMessage, b)
}

func (s *session) run() {
	defer s.ws.Close()
	if s.send(&realtime.SessionCreated{Session: s.cfg.Clone()}) != nil ||
		s.send(&realtime.ConversationCreated{Conversation: realtime.Conversation{ID: s.p.id("conv"), Object: "realtime.conversation"}}) != nil {
		return
	}
	for {
		_, msg, err := s.ws.ReadMessage()
		if err != nil {
			return
		}
		e, err := realtime.DecodeLenient(msg)
		if err != nil {
			_ = s.send(&realtime.ErrorEvent{Error: realtime.ErrorDetail{Type: realtime.ErrorInvalidRequest, Code: "invalid_json", Message: err.Error()}})
			continue
		}
		if err := s.handle(e); err != nil {
			return
		}
	}
}

func (s *session) handle(e realtime.Event) error {
	switch v := e.(type) {
	case *realtime.SessionUpdate:
		s.cfg.Merge(v.Session)
		return s.send(&realtime.SessionUpdated{Session: s.cfg.Clone()})
	case *realtime.InputAudioBufferAppend:
		s.p.appends.Add(1)
		return s.echo(v.Audio)
	case *realtime.ResponseCreate:
		if err := s.finish(); err != nil {
			return err
		}
		id := s.p.id("resp")
		r := realtime.Response{ID: id, Object: "realtime.response", Status: "in_progress", ConversationID: "conv", OutputModalities: []string{"audio"}}
		if err := s.send(&realtime.ResponseCreated{Response: r}); err != nil {
			return err
		}
		r.Status = "completed"
		return s.send(&realtime.ResponseDone{Response: r})
	case *realtime.ResponseCancel:
		return s.finish()
	}
	return nil
}

// echo sends audio back as the current response's next delta, opening a
// response first when none is in progress and closing it after a turn.
func (s *session) echo(audio []byte) error {
	if s.respID == "" {
		s.respID, s.itemID, s.respBytes = s.p.id("resp"), s.p.id("item"), 0
		r := realtime.Response{ID: s.respID, Object: "realtime.response", Status: "in_progress", ConversationID: "conv", OutputModalities: []string{"audio"}}
		item := realtime.Item{ID: s.itemID, Object: "realtime.item", Type: realtime.ItemMessage, Status: "in_progress", Role: "assistant"}
		if err := s.send(&realtime.ResponseCreated{Response: r}); err != nil {
			return err
		}
		if err := s.send(&realtime.ResponseOutputItemAdded{ResponseID: s.respID, Item: item}); err != nil {
			return err
		}
		if err := s.send(&realtime.ResponseContentPartAdded{ResponseID: s.respID, ItemID: s.itemID, Part: realtime.ContentPart{Type: "audio"}}); err != nil {
			return err
		}
	}
	if err := s.send(&realtime.ResponseOutputAudioDelta{ResponseID: s.respID, ItemID: s.itemID, Delta: audio}); err != nil {
		return err
	}
	s.p.deltas.Add(1)
	s.respBytes += len(audio)
	if time.Duration(s.respBytes/s.outputFormat().BytesPerMs())*time.Millisecond >= s.p.turn {
		return s.finish()
	}
	return nil
}

// outputFormat is the session's output audio format (nil: audio/pcm).
func (s *session) outputFormat() *realtime.AudioFormat {
	if a := s.cfg.Audio; a != nil && a.Output != nil {
		return a.Output.Format
	}
	return nil
}

// finish ends the response in progress, if any.
func (s *session) finish() error {
	if s.respID == "" {
		return nil
	}
	resp, item := s.respID, s.itemID
	s.respID, s.itemID = "", ""
	done := realtime.Item{ID: item, Object: "realtime.item", Type: realtime.ItemMessage, Status: "completed", Role: "assistant",
		Content: []realtime.ContentPart{{Type: "audio"}}}
	for _, e := range []realtime.Event{
		&realtime.ResponseOutputAudioDone{ResponseID: resp, ItemID: item},
		&realtime.ResponseContentPartDone{ResponseID: resp, ItemID: item, Part: realtime.ContentPart{Type: "audio"}},
		&realtime.ResponseOutputItemDone{ResponseID: resp, Item: done},
		&realtime.ResponseDone{Response: realtime.Response{ID: resp, Object: "realtime.response", Status: "completed", ConversationID: "conv",
			OutputModalities: []string{"audio"}, Output: []realtime.Item{done}}},
	} {
		if err := s.send(e); err != nil {
			return err
		}
	}
	return nil
}
