package speech

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// fakeProvider is a test double of the provider's speech API on loopback,
// faithful to the spec's shapes: POST /v1/tts (raw audio or the timed
// envelope), WebSocket /v1/tts (text.delta in, audio.delta and audio.done
// out), POST /v1/stt (multipart, file last, JSON transcript) and WebSocket
// /v1/stt (transcript.created, transcript.partial, transcript.done).
type fakeProvider struct {
	srv *httptest.Server

	mu        sync.Mutex
	auth      []string
	ttsBodies []map[string]any
	sttFields []Field
	sttFile   int64
	sttOrder  []string
	sttQuery  string
	sttAudio  int
	// sttDoneDelay is how long the streaming transcription takes to
	// answer audio.done (a decoder finishing a long utterance).
	sttDoneDelay time.Duration
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	f := &fakeProvider{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tts", f.tts)
	mux.HandleFunc("GET /v1/tts", f.ttsStream)
	mux.HandleFunc("POST /v1/stt", f.stt)
	mux.HandleFunc("GET /v1/stt", f.sttStream)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) record(r *http.Request) {
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
}

// tone is 440 Hz at rate for seconds.
func tone(rate int, seconds float64) []int16 {
	n := int(float64(rate) * seconds)
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return out
}

func (f *fakeProvider) tts(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.ttsBodies = append(f.ttsBodies, body)
	f.mu.Unlock()
	of, _ := body["output_format"].(map[string]any)
	rate := int(of["sample_rate"].(float64))
	text := body["text"].(string)
	rs := []rune(text)
	per := 0.05
	pcm := tone(rate, per*float64(len(rs)))
	if ts, _ := body["with_timestamps"].(bool); !ts {
		w.Header().Set("Content-Type", "audio/pcm")
		_, _ = w.Write(pcmBytes(pcm))
		return
	}
	type span struct {
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	}
	chars := make([]string, len(rs))
	times := make([]span, len(rs))
	for i, c := range rs {
		chars[i] = string(c)
		times[i] = span{float64(i) * per, float64(i+1) * per}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"audio": base64.StdEncoding.EncodeToString(pcmBytes(pcm)), "content_type": "audio/pcm",
		"duration":         float64(len(pcm)) / float64(rate),
		"audio_timestamps": map[string]any{"graph_chars": chars, "graph_times": times},
	})
}

var fakeUpgrader = websocket.Upgrader{}

func (f *fakeProvider) ttsStream(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	rate, _ := strconv.Atoi(r.URL.Query().Get("sample_rate"))
	c, err := fakeUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	var text []rune
	for {
		var m wsMessage
		if err := c.ReadJSON(&m); err != nil {
			return
		}
		switch m.Type {
		case "text.delta":
			text = append(text, []rune(m.Delta)...)
			// Answer each delta with its share of audio, as it comes.
			pcm := tone(rate, 0.05*float64(len([]rune(m.Delta))))
			_ = c.WriteJSON(wsMessage{Type: "audio.delta", Delta: base64.StdEncoding.EncodeToString(pcmBytes(pcm))})
		case "text.done":
			_ = c.WriteJSON(wsMessage{Type: "audio.done"})
			text = nil
		}
	}
}

func (f *fakeProvider) stt(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	mr, err := r.MultipartReader()
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var (
		fields []Field
		order  []string
		size   int64
	)
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		order = append(order, p.FormName())
		if p.FormName() == "file" {
			size, _ = io.Copy(io.Discard, p)
			continue
		}
		b, _ := io.ReadAll(p)
		fields = append(fields, Field{p.FormName(), string(b)})
	}
	f.mu.Lock()
	f.sttFields, f.sttFile, f.sttOrder = fields, size, order
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"text":"hello world","language":"","duration":1.5,`+
		`"words":[{"text":"hello","start":0.1,"end":0.5,"confidence":0.9},{"text":"world","start":0.6,"end":1.2}]}`)
}

func (f *fakeProvider) sttStream(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	f.mu.Lock()
	f.sttQuery = r.URL.RawQuery
	f.mu.Unlock()
	c, err := fakeUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.WriteJSON(map[string]any{"type": "transcript.created"})
	total := 0
	for {
		mt, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		if mt == websocket.BinaryMessage {
			if string(b) == "boom" {
				_ = c.WriteJSON(map[string]any{"type": "error", "error": map[string]string{"code": "pipeline", "message": "decoder failed"}})
				_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "pipeline"))
				return
			}
			total += len(b)
			f.mu.Lock()
			f.sttAudio = total
			f.mu.Unlock()
			_ = c.WriteJSON(map[string]any{"type": "transcript.partial", "text": "hel", "is_final": false, "speech_final": false})
			continue
		}
		var m struct{ Type string }
		_ = json.Unmarshal(b, &m)
		switch m.Type {
		case "finalize", "Finalize":
			_ = c.WriteJSON(map[string]any{"type": "transcript.partial", "text": "hello", "is_final": true, "speech_final": true})
		case "audio.done":
			f.mu.Lock()
			delay := f.sttDoneDelay
			f.mu.Unlock()
			// The engine's decode time, set by the test past the relay's
			// idle deadline (a socket read deadline: wall clock).
			time.Sleep(delay)
			_ = c.WriteJSON(map[string]any{"type": "transcript.done", "text": "hello", "duration": float64(total) / 32000})
			_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			return
		}
	}
}

func (f *fakeProvider) lastTTS(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.ttsBodies)
	return f.ttsBodies[len(f.ttsBodies)-1]
}
