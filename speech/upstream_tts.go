package speech

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"switchboard/media"

	"github.com/gorilla/websocket"
)

// UpstreamTTS synthesizes through a provider's POST /v1/tts and WebSocket
// /v1/tts. It always asks for raw PCM at the requested rate and leaves
// encoding to this service, so every codec behaves the same whichever
// engine serves.
type UpstreamTTS struct {
	up *upstream
}

// NewUpstreamTTS returns the engine for the provider at base (e.g.
// "https://api.example.com"), authenticating with key.
func NewUpstreamTTS(base, key string, client *http.Client) (*UpstreamTTS, error) {
	up, err := newUpstream(base, key, client)
	if err != nil {
		return nil, err
	}
	return &UpstreamTTS{up: up}, nil
}

type ttsUpstreamRequest struct {
	Text              string       `json:"text"`
	VoiceID           string       `json:"voice_id,omitempty"`
	Language          string       `json:"language"`
	OutputFormat      outputFormat `json:"output_format"`
	Speed             float64      `json:"speed,omitempty"`
	TextNormalization bool         `json:"text_normalization,omitempty"`
	WithTimestamps    bool         `json:"with_timestamps,omitempty"`
}

type outputFormat struct {
	Codec      string `json:"codec"`
	SampleRate *int   `json:"sample_rate,omitempty"`
	BitRate    *int   `json:"bit_rate,omitempty"`
}

// timedEnvelope is the timestamped synthesis response.
type timedEnvelope struct {
	Audio           string  `json:"audio"`
	ContentType     string  `json:"content_type"`
	Duration        float64 `json:"duration"`
	AudioTimestamps struct {
		GraphChars []string    `json:"graph_chars"`
		GraphTimes []graphTime `json:"graph_times"`
	} `json:"audio_timestamps"`
}

// graphTime reads either form of a graph_times entry: [start, end] or
// {"start":…, "end":…}; it is written as [start, end].
type graphTime Span

func (g *graphTime) UnmarshalJSON(b []byte) error {
	var arr []float64
	if err := json.Unmarshal(b, &arr); err == nil {
		if len(arr) != 2 {
			return fmt.Errorf("graph_times entry has %d numbers", len(arr))
		}
		g.Start, g.End = arr[0], arr[1]
		return nil
	}
	var obj struct{ Start, End float64 }
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	g.Start, g.End = obj.Start, obj.End
	return nil
}

func (g graphTime) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]float64{round3(g.Start), round3(g.End)})
}

// Language accepts any well-formed language tag the spec's list lacks:
// the provider judges what it speaks (and answers 400 when it does not).
func (u *UpstreamTTS) Language(tag string) (string, bool) {
	t := strings.ReplaceAll(strings.TrimSpace(tag), "_", "-")
	if !languageTag.MatchString(strings.ToLower(t)) {
		return "", false
	}
	return t, true
}

// Synthesize posts the request upstream and returns its PCM.
func (u *UpstreamTTS) Synthesize(ctx context.Context, req *Request) (*Audio, error) {
	rate := outRate(req)
	body, _ := json.Marshal(ttsUpstreamRequest{
		Text: req.Text, VoiceID: req.Voice.ID, Language: langOrAuto(req.Language),
		OutputFormat: outputFormat{Codec: "pcm", SampleRate: &rate},
		Speed:        req.Speed, TextNormalization: req.Normalize, WithTimestamps: req.Timestamps,
	})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.up.httpURL("/v1/tts"), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header = u.up.header()
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := u.up.client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("%w: upstream tts: %w", ErrEngineUnavailable, err)
	}
	defer resp.Body.Close()
	if err := checkResponse(resp); err != nil {
		return nil, fmt.Errorf("upstream tts: %w", err)
	}
	if !req.Timestamps {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("upstream tts: %w", err)
		}
		return &Audio{PCM: media.DecodePCM16LE(nil, b), SampleRate: rate}, nil
	}
	var env timedEnvelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return nil, fmt.Errorf("upstream tts envelope: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(env.Audio)
	if err != nil {
		return nil, fmt.Errorf("upstream tts audio: %w", err)
	}
	a := &Audio{PCM: media.DecodePCM16LE(nil, raw), SampleRate: rate}
	a.Times = alignGraphs(req.Text, env.AudioTimestamps.GraphChars, env.AudioTimestamps.GraphTimes)
	return a, nil
}

// alignGraphs maps the provider's graph entries (one per character, or one
// per tag) onto one span per rune of text.
func alignGraphs(text string, chars []string, times []graphTime) []Span {
	rs := []rune(text)
	out := make([]Span, len(rs))
	i := 0
	for k, c := range chars {
		if k >= len(times) {
			break
		}
		for range []rune(c) {
			if i < len(out) {
				out[i] = Span(times[k])
				i++
			}
		}
	}
	for ; i < len(out); i++ { // a short answer: the rest sits at the end
		if i > 0 {
			out[i] = Span{out[i-1].End, out[i-1].End}
		}
	}
	return out
}

func langOrAuto(l string) string {
	if l == "" {
		return "auto"
	}
	return l
}

// SynthesizeStream opens the provider's WebSocket /v1/tts for one
// utterance: text.delta messages out, audio.delta messages (base64 PCM) or
// binary frames in, until audio.done.
func (u *UpstreamTTS) SynthesizeStream(ctx context.Context, req *Request, text <-chan string, emit func(pcm []int16) error) error {
	q := url.Values{}
	q.Set("voice", req.Voice.ID)
	q.Set("language", langOrAuto(req.Language))
	q.Set("codec", "pcm")
	q.Set("sample_rate", strconv.Itoa(outRate(req)))
	if req.Speed != 0 {
		q.Set("speed", strconv.FormatFloat(req.Speed, 'f', -1, 64))
	}
	conn, err := u.up.dial(ctx, "/v1/tts", q.Encode())
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	sendErr := make(chan error, 1)
	go func() {
		for d := range text {
			if err := conn.WriteJSON(wsMessage{Type: "text.delta", Delta: d}); err != nil {
				sendErr <- err
				for range text { // drain so the producer never blocks
				}
				return
			}
		}
		sendErr <- conn.WriteJSON(wsMessage{Type: "text.done"})
	}()
	for {
		mt, b, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("upstream tts stream: %w", err)
		}
		if mt == websocket.BinaryMessage {
			if err := emit(media.DecodePCM16LE(nil, b)); err != nil {
				return err
			}
			continue
		}
		var m wsMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("upstream tts stream: %w", err)
		}
		switch m.Type {
		case "audio.delta":
			raw, err := base64.StdEncoding.DecodeString(m.Delta)
			if err != nil {
				return fmt.Errorf("upstream tts stream audio: %w", err)
			}
			if err := emit(media.DecodePCM16LE(nil, raw)); err != nil {
				return err
			}
		case "audio.done":
			if err := <-sendErr; err != nil {
				return fmt.Errorf("upstream tts stream: %w", err)
			}
			return nil
		case "error":
			return fmt.Errorf("upstream tts stream: %s%s", m.Message, string(m.Error))
		}
	}
}
