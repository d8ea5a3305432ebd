package speech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"

	"github.com/gorilla/websocket"
)

// UpstreamSTT transcribes through a provider's POST /v1/stt (the upload is
// streamed from disk into a multipart body, file last) and WebSocket
// /v1/stt (frames relayed both ways).
type UpstreamSTT struct {
	up *upstream
}

// NewUpstreamSTT returns the engine for the provider at base,
// authenticating with key.
func NewUpstreamSTT(base, key string, client *http.Client) (*UpstreamSTT, error) {
	up, err := newUpstream(base, key, client)
	if err != nil {
		return nil, err
	}
	return &UpstreamSTT{up: up}, nil
}

// Transcribe forwards the request's fields and file.
func (u *UpstreamSTT) Transcribe(ctx context.Context, req *STTRequest) (*Transcript, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(writeSTTBody(mw, req))
	}()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.up.httpURL("/v1/stt"), pr)
	if err != nil {
		pr.Close()
		return nil, err
	}
	hreq.Header = u.up.header()
	hreq.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := u.up.client.Do(hreq)
	pr.Close() // ends the writer if the request stopped early
	if err != nil {
		return nil, fmt.Errorf("%w: upstream stt: %w", ErrEngineUnavailable, err)
	}
	defer resp.Body.Close()
	if err := checkResponse(resp); err != nil {
		return nil, fmt.Errorf("upstream stt: %w", err)
	}
	var t Transcript
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&t); err != nil {
		return nil, fmt.Errorf("upstream stt transcript: %w", err)
	}
	return &t, nil
}

func writeSTTBody(mw *multipart.Writer, req *STTRequest) error {
	for _, f := range req.Fields {
		if err := mw.WriteField(f.Name, f.Value); err != nil {
			return err
		}
	}
	if req.File != nil {
		fw, err := mw.CreateFormFile("file", "audio")
		if err != nil {
			return err
		}
		if _, err := io.Copy(fw, io.NewSectionReader(req.File, 0, req.FileSize)); err != nil {
			return err
		}
	}
	return mw.Close()
}

// OpenStream dials the provider's streaming endpoint with the client's
// query string.
func (u *UpstreamSTT) OpenStream(ctx context.Context, rawQuery string) (TranscriptStream, error) {
	c, err := u.up.dial(ctx, "/v1/stt", rawQuery)
	if err != nil {
		return nil, err
	}
	return &upstreamStream{c: c}, nil
}

type upstreamStream struct {
	c *websocket.Conn
}

func (s *upstreamStream) SendAudio(frame []byte) error {
	return s.c.WriteMessage(websocket.BinaryMessage, frame)
}

func (s *upstreamStream) SendMessage(msg []byte) error {
	return s.c.WriteMessage(websocket.TextMessage, msg)
}

func (s *upstreamStream) Receive() ([]byte, error) {
	for {
		mt, b, err := s.c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%w: %w", errUpstreamClosed, err)
		}
		if mt == websocket.TextMessage {
			return b, nil
		}
	}
}

func (s *upstreamStream) Close() error { return s.c.Close() }
