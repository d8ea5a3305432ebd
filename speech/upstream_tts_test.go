package speech

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"switchboard/media"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func upstreamOpts(t *testing.T, f *fakeProvider) Options {
	t.Setenv("TEST_SPEECH_KEY", "provider-key")
	return Options{TTSEngine: EngineUpstream, STTEngine: EngineUpstream, UpstreamURL: f.srv.URL, UpstreamKeyEnv: "TEST_SPEECH_KEY"}
}

func TestUpstreamTTSForwardsFieldsAndEncodes(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"Hi [pause] you","language":"FR","voice_id":"Leo","speed":1.2,"text_normalization":true,"output_format":{"codec":"wav","sample_rate":16000}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "audio/wav", resp.Header.Get("Content-Type"))
	pcm, rate, err := parseWAV(readAll(t, resp))
	require.NoError(t, err)
	require.Equal(t, 16000, rate)
	require.InDelta(t, 0.05*14, float64(len(pcm))/16000, 0.001, "the provider's audio, whole")

	body := f.lastTTS(t)
	require.Equal(t, "Hi [pause] you", body["text"], "tags go to the provider untouched")
	require.Equal(t, "leo", body["voice_id"])
	require.Equal(t, "fr", body["language"])
	require.Equal(t, 1.2, body["speed"])
	require.Equal(t, true, body["text_normalization"])
	require.Equal(t, map[string]any{"codec": "pcm", "sample_rate": 16000.0}, body["output_format"])
	require.Equal(t, "Bearer provider-key", f.auth[0])
}

func TestUpstreamTTSTimestamps(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	text := "Hi <soft>yo</soft>"
	resp := postJSON(t, srv.URL+"/v1/tts", fmt.Sprintf(`{"text":%q,"language":"en","with_timestamps":true,"output_format":{"codec":"mulaw","sample_rate":8000}}`, text))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var env timedBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	require.Equal(t, "audio/basic", env.ContentType)
	require.Len(t, env.AudioTimestamps.GraphTimes, len(text))
	// The provider's object-form times come out as [start, end].
	require.Equal(t, [2]float64{0.05, 0.1}, env.AudioTimestamps.GraphTimes[1])
	require.InDelta(t, 0.05*float64(len(text)), env.Duration, 0.001)
}

func TestUpstreamTTSStream(t *testing.T) {
	f := newFakeProvider(t)
	srv, _ := newTestServer(t, upstreamOpts(t, f))
	c := dialWS(t, wsURL(srv.URL, "/v1/tts?language=en&voice=sal&sample_rate=16000"))
	for u := 0; u < 2; u++ {
		require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "abcd"}))
		require.NoError(t, c.WriteJSON(wsMessage{Type: "text.delta", Delta: "efgh"}))
		require.NoError(t, c.WriteJSON(wsMessage{Type: "text.done"}))
		audio, chunks := readUtterance(t, c)
		require.Equal(t, 2, chunks, "one chunk per provider delta")
		require.InDelta(t, 0.4, float64(len(audio)/2)/16000, 0.001)
	}
}

func TestUpstreamProviderRejectionIs400(t *testing.T) {
	f := newFakeProvider(t)
	opts := upstreamOpts(t, f)
	opts.UpstreamURL = f.srv.URL + "/missing"
	srv, _ := newTestServer(t, opts)
	resp := postJSON(t, srv.URL+"/v1/tts", `{"text":"hi","language":"en"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a provider 404 is the request's fault")
}

func TestNewServiceRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{TTSEngine: "festival"},
		{STTEngine: "whisper"},
		{TTSEngine: EngineUpstream, UpstreamURL: "ftp://x"},
		{STTEngine: EngineUpstream},
	} {
		_, err := NewService(o, zerolog.Nop())
		require.Error(t, err, "%+v", o)
	}
}

// TestRenderG711ForGreetings renders an 8 kHz G.711 greeting the way the
// agent runtime will, and decodes it back.
func TestRenderG711ForGreetings(t *testing.T) {
	svc, err := NewService(Options{}, zerolog.Nop())
	require.NoError(t, err)
	ctx := context.Background()
	ref, err := svc.Synthesize(ctx, Request{Text: "Thanks for calling. How can I help?", SampleRate: 8000})
	require.NoError(t, err)
	require.Equal(t, 8000, ref.SampleRate)
	for _, codec := range []Codec{CodecMulaw, CodecAlaw} {
		b, err := svc.RenderG711(ctx, Request{Text: "Thanks for calling. How can I help?", Voice: Voices[2]}, codec)
		require.NoError(t, err)
		var pcm []int16
		if codec == CodecMulaw {
			pcm = media.PCMU.DecodeFrame(nil, b)
		} else {
			pcm = media.PCMA.DecodeFrame(nil, b)
		}
		require.InDelta(t, float64(len(ref.PCM))/8000, float64(len(pcm))/8000, 0.3)
		require.Greater(t, rms(pcm), 500.0)
	}
	_, err = svc.RenderG711(ctx, Request{Text: "x"}, CodecMP3)
	require.Error(t, err)
	_, err = svc.Synthesize(ctx, Request{Text: "<slow>x"})
	require.ErrorIs(t, err, errUnbalancedTag)
	_, err = svc.Synthesize(ctx, Request{Text: "x", Language: "xx"})
	require.Error(t, err)
	require.NoError(t, svc.Close())
}
