package speech

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// form builds a multipart body from fields (in order) and an optional
// file, written last unless fileFirst.
func form(t *testing.T, fields [][2]string, file []byte, fileFirst bool) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	writeFile := func() {
		if file != nil {
			w, err := mw.CreateFormFile("file", "audio.bin")
			require.NoError(t, err)
			_, _ = w.Write(file)
		}
	}
	if fileFirst {
		writeFile()
	}
	for _, f := range fields {
		require.NoError(t, mw.WriteField(f[0], f[1]))
	}
	if !fileFirst {
		writeFile()
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), b.Bytes()
}

func postForm(t *testing.T, url, ctype string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	require.NoError(t, err)
	req.Header = bearer()
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var (
	wavFile = append(wavHeader(16000, 3200), make([]byte, 3200)...)
	rawFile = pcmBytes(sine(16000, 300, 0.1, 3000))
)

func TestSTTValidation(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	f := func(kv ...string) [][2]string {
		var out [][2]string
		for i := 0; i < len(kv); i += 2 {
			out = append(out, [2]string{kv[i], kv[i+1]})
		}
		return out
	}
	terms := func(n, size int) [][2]string {
		var out [][2]string
		for i := 0; i < n; i++ {
			out = append(out, [2]string{"keyterm", strings.Repeat("k", size)})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		fields    [][2]string
		file      []byte
		fileFirst bool
		param     string
	}{
		{"nothing", nil, nil, false, "file"},
		{"file not last", f("language", "en"), wavFile, true, "file"},
		{"file and url", f("url", "https://example.com/a.wav"), wavFile, false, "url"},
		{"bad url", f("url", "file:///etc/passwd"), nil, false, "url"},
		{"empty file", nil, []byte{}, false, "file"},
		{"unknown field", f("model", "x"), wavFile, false, "model"},
		{"audio_format unknown", f("audio_format", "aiff"), rawFile, false, "audio_format"},
		{"container with audio_format", f("audio_format", "wav"), wavFile, false, "audio_format"},
		{"container with raw audio_format", f("audio_format", "pcm", "sample_rate", "16000"), wavFile, false, "audio_format"},
		{"raw without audio_format", f("sample_rate", "16000"), rawFile, false, "audio_format"},
		{"raw named as container", f("audio_format", "mp3", "sample_rate", "16000"), rawFile, false, "audio_format"},
		{"raw without sample_rate", f("audio_format", "pcm"), rawFile, false, "sample_rate"},
		{"sample_rate bad", f("audio_format", "pcm", "sample_rate", "11025"), rawFile, false, "sample_rate"},
		{"sample_rate_hertz bad", f("audio_format", "pcm", "sample_rate_hertz", "abc"), rawFile, false, "sample_rate_hertz"},
		{"both sample rates", f("sample_rate", "8000", "sample_rate_hertz", "8000"), wavFile, false, "sample_rate_hertz"},
		{"format needs language", f("format", "true"), wavFile, false, "language"},
		{"format not bool", f("format", "yes", "language", "en"), wavFile, false, "format"},
		{"multichannel not bool", f("multichannel", "2"), wavFile, false, "multichannel"},
		{"diarize not bool", f("diarize", "maybe"), wavFile, false, "diarize"},
		{"filler_words not bool", f("filler_words", "1x"), wavFile, false, "filler_words"},
		{"channels too many", f("channels", "9"), wavFile, false, "channels"},
		{"channels not int", f("channels", "two"), wavFile, false, "channels"},
		{"multichannel with one channel", f("multichannel", "true", "channels", "1"), wavFile, false, "channels"},
		{"multichannel raw without channels", f("multichannel", "true", "audio_format", "pcm", "sample_rate", "16000"), rawFile, false, "channels"},
		{"too many keyterms", terms(101, 5), wavFile, false, "keyterm"},
		{"keyterm too long", terms(1, 51), wavFile, false, "keyterm"},
		{"keyterm empty", terms(1, 0), wavFile, false, "keyterm"},
		{"duplicate field", f("language", "en", "language", "fr"), wavFile, false, "language"},
		{"raw url without sample_rate", f("url", "https://example.com/a", "audio_format", "mulaw"), nil, false, "sample_rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctype, body := form(t, tc.fields, tc.file, tc.fileFirst)
			resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, tc.param, apiError(t, resp).Param)
		})
	}
}

func TestSTTNotMultipartIs415(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	resp := postForm(t, srv.URL+"/v1/stt", "application/json", strings.NewReader(`{}`))
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}

// TestSTTWithoutEngineIs503AfterValidation: a valid request reaches the
// engine check and gets a clear 503.
func TestSTTWithoutEngineIs503AfterValidation(t *testing.T) {
	dir := t.TempDir()
	srv, _ := newTestServer(t, Options{TempDir: dir, STTEngine: EngineNone})
	for _, tc := range []struct {
		fields [][2]string
		file   []byte
	}{
		{[][2]string{{"language", "en"}, {"keyterm", "Switchboard"}}, wavFile},
		{[][2]string{{"audio_format", "mulaw"}, {"sample_rate", "8000"}}, rawFile},
		{[][2]string{{"url", "https://example.com/a.mp3"}}, nil},
	} {
		ctype, body := form(t, tc.fields, tc.file, false)
		resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Contains(t, apiError(t, resp).Message, "no speech-to-text engine is configured")
	}
	// No upload is left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestSTTForwardsToUpstream(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	fields := [][2]string{{"language", "en"}, {"format", "true"}, {"diarize", "true"}, {"keyterm", "Switchboard"}, {"keyterm", "espeak"},
		{"audio_format", "pcm"}, {"sample_rate_hertz", "16000"}, {"multichannel", "true"}, {"channels", "2"}, {"filler_words", "true"}}
	ctype, body := form(t, fields, rawFile, false)
	resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
	b := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var tr Transcript
	require.NoError(t, json.Unmarshal(b, &tr))
	require.Equal(t, "hello world", tr.Text)
	require.Len(t, tr.Words, 2)
	require.Equal(t, 0.9, tr.Words[0].Confidence)

	f.mu.Lock()
	defer f.mu.Unlock()
	var want []Field
	for _, kv := range fields {
		want = append(want, Field{kv[0], kv[1]})
	}
	require.Equal(t, want, f.sttFields)
	require.Equal(t, "file", f.sttOrder[len(f.sttOrder)-1], "file last")
	require.Equal(t, int64(len(rawFile)), f.sttFile)
	require.Equal(t, "Bearer provider-key", f.auth[0])
}

func TestSTTForwardsURL(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	ctype, body := form(t, [][2]string{{"url", "https://example.com/call.wav"}}, nil, false)
	resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Equal(t, []Field{{"url", "https://example.com/call.wav"}}, f.sttFields)
	require.Equal(t, int64(0), f.sttFile)
}

func TestSTTUploadLimitIs413(t *testing.T) {
	srv, _ := newTestServer(t, Options{MaxUploadBytes: 1000})
	ctype, body := form(t, nil, append(wavHeader(8000, 2000), make([]byte, 2000)...), false)
	resp := postForm(t, srv.URL+"/v1/stt", ctype, bytes.NewReader(body))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// zeroReader yields n zero bytes without holding them.
type zeroReader struct{ left int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.left {
		n = z.left
	}
	clear(p[:n])
	z.left -= n
	return int(n), nil
}

// TestSTT500MBUploadIsStreamed posts a 500 MB WAV (generated on the fly
// through a pipe, never in memory) through the endpoint and on to the
// fake provider, sampling the heap while it runs: it must not grow by more
// than a few MB.
func TestSTT500MBUploadIsStreamed(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	const size = 500 * 1000 * 1000
	const data = size - 44

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.Load() {
					peak.Store(m.HeapInuse)
				}
			}
		}
	}()

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := mw.WriteField("language", "en")
		if err == nil {
			var w io.Writer
			w, err = mw.CreateFormFile("file", "big.wav")
			if err == nil {
				if _, err = w.Write(wavHeader(16000, data)); err == nil {
					_, err = io.Copy(w, &zeroReader{left: data})
				}
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	start := time.Now()
	resp := postForm(t, srv.URL+"/v1/stt", mw.FormDataContentType(), pr)
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	require.Equal(t, http.StatusOK, resp.StatusCode, string(readAll(t, resp)))
	f.mu.Lock()
	require.Equal(t, int64(size), f.sttFile, "every byte reached the provider")
	f.mu.Unlock()

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(peak.Load()) - int64(before.HeapInuse)
	t.Logf("500 MB upload in %v: heap in use %.1f MB before, peak %.1f MB (+%.1f MB), sys %.1f -> %.1f MB",
		elapsed, mb(before.HeapInuse), mb(peak.Load()), float64(growth)/1e6, mb(before.Sys), mb(after.Sys))
	require.Less(t, growth, int64(8<<20), "heap grew by %d bytes", growth)
	require.Less(t, int64(after.Sys)-int64(before.Sys), int64(16<<20), "process memory from the runtime")
}

func mb(v uint64) float64 { return float64(v) / 1e6 }
