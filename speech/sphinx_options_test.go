package speech

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"switchboard/media/wav"
)

// decodeWait bounds a read that waits for the decoder: pocketsphinx takes
// most of a second of CPU per run, and the machine is shared (a load of
// 18 on 2 cores made one run take 20 s).
const decodeWait = 2 * time.Minute

// readEvent reads the next server message within decodeWait.
func readEvent(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(decodeWait)))
	var m map[string]any
	require.NoError(t, c.ReadJSON(&m))
	return m
}

// requireCentiseconds fails unless v (a JSON number) has at most two
// decimals.
func requireCentiseconds(t *testing.T, v any, what string) {
	t.Helper()
	f, ok := v.(float64)
	require.True(t, ok, "%s is a number: %v", what, v)
	require.InDelta(t, math.Round(f*100)/100, f, 1e-9, "%s has at most 2 decimals: %v", what, f)
}

// requireWords checks each word of a transcript or event: times with two
// decimals, in order, within [from, to] seconds.
func requireWords(t *testing.T, words any, from, to float64) {
	t.Helper()
	ws, _ := words.([]any)
	require.NotEmpty(t, ws, "words")
	last := from
	for _, w := range ws {
		w := w.(map[string]any)
		requireCentiseconds(t, w["start"], "start")
		requireCentiseconds(t, w["end"], "end")
		require.GreaterOrEqual(t, w["start"].(float64), last-1e-9, "%v", w)
		require.LessOrEqual(t, w["start"].(float64), w["end"].(float64), "%v", w)
		require.LessOrEqual(t, w["end"].(float64), to+1e-9, "%v", w)
		require.NotContains(t, w, "speaker", "no speaker without diarize")
		last = w["end"].(float64)
	}
}

// TestPocketsphinxRefusesWhatItCannot: an option the local engine cannot
// honour is a 400 naming the field, on POST /v1/stt and before the
// WebSocket upgrade, never accepted and dropped: diarize (it cannot tell
// speakers apart), smart_turn (it has no end-of-turn model), keyterm (it
// cannot bias its search), format (it has no inverse text normalization).
// Their "off" values are accepted.
func TestPocketsphinxRefusesWhatItCannot(t *testing.T) {
	requirePocketsphinx(t)
	srv, _ := newTestServer(t, Options{})
	file := wav.Encode(speak(t, "thank you very much for your help", 16000), 16000)
	for _, tc := range []struct {
		name   string
		fields [][2]string
		param  string
	}{
		{"diarize", [][2]string{{"diarize", "true"}}, "diarize"},
		{"keyterm", [][2]string{{"keyterm", "Switchboard"}}, "keyterm"},
		{"format", [][2]string{{"language", "en"}, {"format", "true"}}, "format"},
	} {
		t.Run("rest "+tc.name, func(t *testing.T) {
			ctype, body := form(t, tc.fields, file, false)
			resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			e := apiError(t, resp)
			require.Equal(t, tc.param, e.Param)
			require.Contains(t, e.Message, tc.param)
		})
	}
	t.Run("rest off values", func(t *testing.T) {
		ctype, body := form(t, [][2]string{{"diarize", "false"}, {"format", "false"}}, file, false)
		resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(readAll(t, resp)))
	})
	for _, tc := range []struct{ query, param string }{
		{"diarize=true", "diarize"},
		{"smart_turn=0.5", "smart_turn"},
		{"smart_turn=0.7&smart_turn_timeout=300", "smart_turn"},
		{"keyterm=Switchboard", "keyterm"},
	} {
		t.Run("stream "+tc.query, func(t *testing.T) {
			_, resp, err := websocket.DefaultDialer.Dial(wsURL(srv.URL, "/v1/stt?"+tc.query), bearer())
			require.Error(t, err)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			e := apiError(t, resp)
			require.Equal(t, tc.param, e.Param)
			require.Contains(t, e.Message, tc.param)
		})
	}
	t.Run("stream off values", func(t *testing.T) {
		c := dialWS(t, wsURL(srv.URL, "/v1/stt?diarize=false&interim_results=false"))
		require.Equal(t, "transcript.created", readEvent(t, c)["type"])
	})
}

// TestPocketsphinxTranscriptShape: the transcript is the spec's: language
// present and empty (the spec's "currently always empty"), duration always
// present, times with two decimals; words omitted when there are none.
func TestPocketsphinxTranscriptShape(t *testing.T) {
	requirePocketsphinx(t)
	srv, _ := newTestServer(t, Options{})
	pcm := speak(t, "i need to change my delivery address", 16000)
	pcm = append(pcm, make([]int16, 16000*37/100)...) // 0.37 s more: an odd length
	post := func(file []byte, fields ...[2]string) map[string]any {
		ctype, body := form(t, fields, file, false)
		resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
		b := readAll(t, resp)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	tr := post(wav.Encode(pcm, 16000))
	require.Contains(t, tr, "language")
	require.Equal(t, "", tr["language"])
	requireCentiseconds(t, tr["duration"], "duration")
	require.InDelta(t, float64(len(pcm))/16000, tr["duration"], 0.005)
	requireWords(t, tr["words"], 0, tr["duration"].(float64))
	require.Contains(t, tr["text"], "change")

	silence := post(wav.Encode(make([]int16, 8000), 16000))
	require.Equal(t, 0.5, silence["duration"], "duration is present with no speech")
	require.Equal(t, "", silence["text"])
	require.NotContains(t, silence, "words", "omitted when empty")

	multi := post(pcmBytes(interleave(pcm, make([]int16, len(pcm)))),
		[2]string{"audio_format", "pcm"}, [2]string{"sample_rate", "16000"}, [2]string{"multichannel", "true"}, [2]string{"channels", "2"})
	requireCentiseconds(t, multi["duration"], "duration")
	chans := multi["channels"].([]any)
	require.Len(t, chans, 2)
	for _, ch := range chans {
		require.Equal(t, "", ch.(map[string]any)["language"])
	}
	requireWords(t, chans[0].(map[string]any)["words"], 0, multi["duration"].(float64))
}

func interleave(a, b []int16) []int16 {
	out := make([]int16, 0, 2*len(a))
	for i := range a {
		out = append(out, a[i], b[i])
	}
	return out
}

// TestPocketsphinxStreamDurationAlwaysPresent: transcript.done carries
// duration even when no audio came (0), and with two decimals when it did.
func TestPocketsphinxStreamDurationAlwaysPresent(t *testing.T) {
	requirePocketsphinx(t)
	srv, _ := newTestServer(t, Options{})
	c := dialWS(t, wsURL(srv.URL, "/v1/stt"))
	require.Equal(t, "transcript.created", readEvent(t, c)["type"])
	require.NoError(t, c.WriteJSON(map[string]any{"type": "audio.done"}))
	var done map[string]any
	for done == nil {
		if m := readEvent(t, c); m["type"] == "transcript.done" {
			done = m
		}
	}
	require.Contains(t, done, "duration")
	require.Equal(t, 0.0, done["duration"])

	c = dialWS(t, wsURL(srv.URL, "/v1/stt?sample_rate=8000&encoding=mulaw"))
	require.Equal(t, "transcript.created", readEvent(t, c)["type"])
	require.NoError(t, c.WriteMessage(websocket.BinaryMessage, bytes.Repeat([]byte{0xff}, 8000*1234/1000))) // 1.234 s of µ-law silence
	require.NoError(t, c.WriteJSON(map[string]any{"type": "audio.done"}))
	done = nil
	for done == nil {
		if m := readEvent(t, c); m["type"] == "transcript.done" {
			done = m
		}
	}
	require.Equal(t, 1.23, done["duration"])
}

// TestPocketsphinxStreamInterim: with interim_results=true the local
// engine sends pocketsphinx's hypothesis of the utterance so far as
// transcript.partial with is_final=false (about every 500 ms of speech,
// as fast as the decoder keeps up), words timed within the audio sent,
// before the utterance's final partial; without it, none.
func TestPocketsphinxStreamInterim(t *testing.T) {
	requirePocketsphinx(t)
	srv, _ := newTestServer(t, Options{})
	speech := speak(t, "the package arrived yesterday but it was damaged and i would like a refund", 16000)
	head := 16000 * 25 / 10 // 2.5 s
	require.Greater(t, len(speech), head+16000)
	send := func(c *websocket.Conn, pcm []int16) {
		b := pcmBytes(pcm)
		for i := 0; i < len(b); i += 3200 { // 100 ms frames
			require.NoError(t, c.WriteMessage(websocket.BinaryMessage, b[i:min(i+3200, len(b))]))
		}
	}

	c := dialWS(t, wsURL(srv.URL, "/v1/stt?sample_rate=16000&interim_results=true"))
	require.Equal(t, "transcript.created", readEvent(t, c)["type"])
	send(c, speech[:head])
	// Nothing ends the utterance yet: what comes is interim.
	interim := readEvent(t, c)
	require.Equal(t, "transcript.partial", interim["type"], "%v", interim)
	require.Equal(t, false, interim["is_final"])
	require.Equal(t, false, interim["speech_final"])
	require.NotEmpty(t, interim["text"])
	requireWords(t, interim["words"], 0, float64(head)/16000)

	send(c, speech[head:])
	require.NoError(t, c.WriteJSON(map[string]any{"type": "audio.done"}))
	var final map[string]any
	interims := 1
	for final == nil {
		m := readEvent(t, c)
		require.Equal(t, "transcript.partial", m["type"], "%v", m)
		if m["is_final"] == true {
			final = m
			continue
		}
		interims++
	}
	require.Equal(t, true, final["speech_final"])
	require.Contains(t, final["text"], "package")
	requireWords(t, final["words"], 0, float64(len(speech))/16000)
	require.Equal(t, "transcript.done", readEvent(t, c)["type"])
	t.Logf("%d interim partials, first %q, final %q", interims, interim["text"], final["text"])

	// Without interim_results: the first event is the utterance's final.
	c = dialWS(t, wsURL(srv.URL, "/v1/stt?sample_rate=16000"))
	require.Equal(t, "transcript.created", readEvent(t, c)["type"])
	send(c, speech)
	require.NoError(t, c.WriteJSON(map[string]any{"type": "audio.done"}))
	first := readEvent(t, c)
	require.Equal(t, true, first["is_final"], "%v", first)
}
