package speech

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"switchboard/api/httpx"
	"switchboard/jsonerr"
)

// Streaming transcription (GET /v1/stt with an upgrade): the query is
// validated here (400 before the upgrade), then the configured engine's
// stream is opened and frames are relayed. Client binary frames are audio;
// client text frames must be JSON finalize / Finalize (optional channel) or
// audio.done: a message that does not parse, or names an unknown type, is
// answered with an error and the socket stays open (the only recoverable
// error). Engine errors are relayed and close the socket.

// parseSTTQuery checks the spec's query parameters.
func parseSTTQuery(r *http.Request) (channels int, err error) {
	q := r.URL.Query()
	boolParam := func(name string) (bool, error) {
		if !q.Has(name) {
			return false, nil
		}
		v, err := strconv.ParseBool(q.Get(name))
		if err != nil {
			return false, httpx.BadRequest(name, "%s must be true or false", name)
		}
		return v, nil
	}
	intParam := func(name string, lo, hi int) (int, bool, error) {
		if !q.Has(name) {
			return 0, false, nil
		}
		v, err := strconv.Atoi(q.Get(name))
		if err != nil || v < lo || v > hi {
			return 0, false, httpx.BadRequest(name, "%s must be an integer from %d to %d", name, lo, hi)
		}
		return v, true, nil
	}
	if q.Has("sample_rate") {
		v, err := strconv.Atoi(q.Get("sample_rate"))
		if err != nil || !validRate(v) {
			return 0, httpx.BadRequest("sample_rate", "sample_rate must be one of %v", SampleRates)
		}
	}
	if q.Has("encoding") {
		switch q.Get("encoding") {
		case "pcm", "mulaw", "alaw":
		default:
			return 0, httpx.BadRequest("encoding", "encoding must be pcm, mulaw or alaw")
		}
	}
	for _, b := range []string{"interim_results", "multichannel", "diarize", "filler_words"} {
		if _, err := boolParam(b); err != nil {
			return 0, err
		}
	}
	if _, _, err := intParam("endpointing", 0, 5000); err != nil {
		return 0, err
	}
	multi, _ := boolParam("multichannel")
	channels = 1
	if q.Has("channels") {
		lo := 1
		if multi {
			lo = 2
		}
		n, _, err := intParam("channels", lo, 8)
		if err != nil {
			if multi {
				return 0, httpx.BadRequest("channels", "multichannel needs channels from 2 to 8")
			}
			return 0, err
		}
		channels = n
	} else if multi {
		return 0, httpx.BadRequest("channels", "multichannel needs channels of at least 2")
	}
	terms := q["keyterm"]
	if len(terms) > 100 {
		return 0, httpx.BadRequest("keyterm", "at most 100 keyterm values are allowed")
	}
	for _, t := range terms {
		if n := utf8.RuneCountInString(t); n == 0 || n > 50 {
			return 0, httpx.BadRequest("keyterm", "each keyterm must have 1 to 50 characters (got %d)", n)
		}
	}
	if q.Has("smart_turn") {
		v, err := strconv.ParseFloat(q.Get("smart_turn"), 64)
		if err != nil || v < 0 || v > 1 {
			return 0, httpx.BadRequest("smart_turn", "smart_turn must be a number from 0.0 to 1.0")
		}
	}
	if _, has, err := intParam("smart_turn_timeout", 1, 5000); err != nil {
		return 0, err
	} else if has && !q.Has("smart_turn") {
		return 0, httpx.BadRequest("smart_turn_timeout", "smart_turn_timeout is only allowed with smart_turn")
	}
	return channels, nil
}

// sttClientMessage is a JSON message of the streaming transcription client.
type sttClientMessage struct {
	Type    string `json:"type"`
	Channel *int   `json:"channel,omitempty"`
}

func (s *Service) handleSTTStream(w http.ResponseWriter, r *http.Request) error {
	if err := requireUpgrade(r); err != nil {
		return err
	}
	channels, err := parseSTTQuery(r)
	if err != nil {
		return err
	}
	if s.stt == nil {
		return errNoSTT()
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	up, err := s.stt.OpenStream(ctx, r.URL.RawQuery)
	if err != nil {
		return engineError(err)
	}
	defer up.Close()
	raw, err := upgrade(w, r)
	if err != nil {
		return nil
	}
	c := &wsConn{Conn: raw}
	if !s.track(c) {
		c.closeWith(websocket.CloseGoingAway, "shutting down")
		return nil
	}
	defer s.untrack(c)
	defer c.Close()

	// Engine to client: every message, then close when the engine ends.
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		for {
			msg, err := up.Receive()
			if err != nil {
				if errors.Is(err, io.EOF) {
					c.closeWith(websocket.CloseNormalClosure, "")
				} else {
					_ = c.writeJSON(newWSError("upstream_error", "transcription stream failed"))
					c.closeWith(websocket.CloseInternalServerErr, "transcription stream failed")
				}
				return
			}
			if err := c.writeText(msg); err != nil {
				_ = up.Close()
				return
			}
			var m wsMessage
			if json.Unmarshal(msg, &m) == nil && m.Type == "error" {
				// Pipeline failures and timeouts end the stream.
				c.closeWith(websocket.CloseInternalServerErr, "transcription error")
				_ = up.Close()
				return
			}
		}
	}()
	s.relaySTTClient(c, up, channels)
	_ = up.Close()
	<-relayDone
	return nil
}

// relaySTTClient forwards client frames to the engine until either side
// ends. A client that sends nothing for StreamIdleTimeout is gone, until
// it sends audio.done: then it waits for the engine's last events, which
// take what the decoder takes, and the engine ends the connection.
func (s *Service) relaySTTClient(c *wsConn, up TranscriptStream, channels int) {
	audioDone := false
	for {
		deadline := time.Now().Add(s.opts.StreamIdleTimeout)
		if audioDone {
			deadline = time.Time{}
		}
		_ = c.SetReadDeadline(deadline)
		mt, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		if mt == websocket.BinaryMessage {
			if err := up.SendAudio(b); err != nil {
				return
			}
			continue
		}
		var m sttClientMessage
		if err := json.Unmarshal(b, &m); err != nil {
			msg := "the message is not a JSON object: finalize or audio.done"
			if je := jsonerr.Translate(b, err); je != nil && je.Path != "" {
				msg = je.Message
			}
			_ = c.writeJSON(newWSError("invalid_message", msg))
			continue
		}
		switch strings.ToLower(m.Type) {
		case "finalize":
			if m.Channel != nil && (*m.Channel < 0 || *m.Channel >= channels) {
				_ = c.writeJSON(newWSError("invalid_message", "finalize channel "+strconv.Itoa(*m.Channel)+" is out of range"))
				continue
			}
		case "audio.done":
			audioDone = true
		default:
			_ = c.writeJSON(newWSError("invalid_message", "unknown message type "+strconv.Quote(m.Type)+" (finalize or audio.done)"))
			continue
		}
		if err := up.SendMessage(b); err != nil {
			return
		}
	}
}
