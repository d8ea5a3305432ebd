package speech

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"switchboard/api/httpx"
)

// audioChunkBytes bounds one audio.delta message (before base64).
const audioChunkBytes = 16 << 10

// Streaming synthesis (GET /v1/tts with an upgrade).
//
// Query: voice (default eve), language (required), and, beyond the spec,
// codec (pcm default, mp3, mulaw, alaw; wav is refused since a stream has
// no length for its header), sample_rate (default 24000), bit_rate (mp3)
// and speed.
//
// Client messages: {"type":"text.delta","delta":"…"} adds text to the
// current utterance; {"type":"text.done"} ends it. Server messages:
// {"type":"audio.delta","delta":"<base64 audio>"} as each sentence is
// rendered, {"type":"audio.done"} when the utterance's audio is all sent,
// and {"type":"error","error":{"code","message"}}. After audio.done another
// utterance may follow on the same connection. A message that does not
// parse, or a bad utterance (e.g. unbalanced tags), is answered with an
// error and the connection stays open.

type ttsStreamParams struct {
	req *Request
	f   Format
}

func (s *Service) parseTTSStream(r *http.Request) (*ttsStreamParams, error) {
	q := r.URL.Query()
	req := &Request{Speed: 1}
	var id *string
	if q.Has("voice") {
		v := q.Get("voice")
		id = &v
	}
	voice, err := parseVoice(id, "voice")
	if err != nil {
		return nil, err
	}
	req.Voice = voice
	if req.Language, err = s.language(q.Get("language"), "language"); err != nil {
		return nil, err
	}
	f := Format{Codec: CodecPCM, SampleRate: DefaultFormat.SampleRate, BitRate: DefaultFormat.BitRate}
	if q.Has("codec") {
		c, ok := parseCodec(q.Get("codec"))
		if !ok || c == CodecWAV {
			return nil, httpx.BadRequest("codec", "codec must be pcm, mp3, mulaw or alaw for streaming")
		}
		f.Codec = c
	}
	if q.Has("sample_rate") {
		n, err := strconv.Atoi(q.Get("sample_rate"))
		if err != nil || !validRate(n) {
			return nil, httpx.BadRequest("sample_rate", "sample_rate must be one of %v", SampleRates)
		}
		f.SampleRate = n
	}
	if q.Has("bit_rate") {
		n, err := strconv.Atoi(q.Get("bit_rate"))
		if err != nil || !containsInt(BitRates, n) {
			return nil, httpx.BadRequest("bit_rate", "bit_rate must be one of %v", BitRates)
		}
		f.BitRate = n
	}
	if err := checkMP3(&f, q.Has("bit_rate"), "bit_rate"); err != nil {
		return nil, err
	}
	if q.Has("speed") {
		v, err := strconv.ParseFloat(q.Get("speed"), 64)
		if err != nil || v < 0.7 || v > 1.5 {
			return nil, httpx.BadRequest("speed", "speed must be between 0.7 and 1.5")
		}
		req.Speed = v
	}
	req.SampleRate = f.SampleRate
	return &ttsStreamParams{req: req, f: f}, nil
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Service) handleTTSStream(w http.ResponseWriter, r *http.Request) error {
	if err := requireUpgrade(r); err != nil {
		return err
	}
	p, err := s.parseTTSStream(r)
	if err != nil {
		return err
	}
	raw, err := upgrade(w, r)
	if err != nil {
		return nil // the upgrader has answered
	}
	c := &wsConn{Conn: raw}
	if !s.track(c) {
		c.closeWith(websocket.CloseGoingAway, "shutting down")
		return nil
	}
	defer s.untrack(c)
	defer c.Close()
	s.serveTTSStream(context.WithoutCancel(r.Context()), c, p)
	return nil
}

// utterance is the synthesis under way on a streaming connection.
type utterance struct {
	text   chan string
	done   chan error
	closed bool // text is closed
	err    error
	ended  bool // done has been received
}

// end closes the text (once) and waits for the synthesis.
func (u *utterance) end() error {
	if !u.closed {
		close(u.text)
		u.closed = true
	}
	if !u.ended {
		u.err = <-u.done
		u.ended = true
	}
	return u.err
}

func (s *Service) serveTTSStream(parent context.Context, c *wsConn, p *ttsStreamParams) {
	ctx, cancel := context.WithCancel(parent)
	var cur *utterance
	defer func() {
		cancel()
		if cur != nil {
			_ = cur.end()
		}
	}()
	emit := func(pcm []int16) error {
		out, err := s.enc.Encode(ctx, pcm, p.f)
		if err != nil {
			return err
		}
		for len(out) > 0 {
			n := min(len(out), audioChunkBytes)
			if err := c.writeJSON(wsMessage{Type: "audio.delta", Delta: base64.StdEncoding.EncodeToString(out[:n])}); err != nil {
				return err
			}
			out = out[n:]
		}
		return nil
	}
	for {
		_ = c.SetReadDeadline(time.Now().Add(s.opts.StreamIdleTimeout))
		mt, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		var m wsMessage
		if mt != websocket.TextMessage || json.Unmarshal(b, &m) != nil {
			_ = c.writeJSON(newWSError("invalid_message", "messages must be JSON text: text.delta or text.done"))
			continue
		}
		switch m.Type {
		case "text.delta":
			if cur == nil {
				cur = &utterance{text: make(chan string, 64), done: make(chan error, 1)}
				u := cur
				go func() {
					req := *p.req
					u.done <- s.tts.SynthesizeStream(ctx, &req, u.text, emit)
				}()
			}
			if cur.ended {
				continue // failed early; the rest of the utterance is dropped
			}
			select {
			case cur.text <- m.Delta:
			case err := <-cur.done:
				cur.ended, cur.err = true, err
				if err == nil {
					err = errors.New("synthesis ended before text.done")
				}
				cur.err = err
				s.reportStreamError(c, err)
			}
		case "text.done":
			if cur == nil {
				_ = c.writeJSON(wsMessage{Type: "audio.done"})
				continue
			}
			reported := cur.ended
			err := cur.end()
			cur = nil
			switch {
			case err == nil:
				_ = c.writeJSON(wsMessage{Type: "audio.done"})
			case !reported:
				s.reportStreamError(c, err)
			}
		default:
			_ = c.writeJSON(newWSError("invalid_message", "unknown message type "+strconv.Quote(m.Type)))
		}
	}
}

func (s *Service) reportStreamError(c *wsConn, err error) {
	var he *httpx.Error
	if e := engineError(err); asError(e, &he) {
		_ = c.writeJSON(newWSError(he.Code, he.Message))
		return
	}
	s.log.Error().Err(err).Msg("streaming synthesis failed")
	_ = c.writeJSON(newWSError("internal", "synthesis failed"))
}
