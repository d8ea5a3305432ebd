package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"switchboard/media"
	"switchboard/media/wav"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/api"
	"switchboard/api/httpx"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testAuthorizer struct{}

func (testAuthorizer) Authorize(ctx context.Context, token string, route httpx.Route) (*httpx.Principal, error) {
	if token != "test-key" {
		return nil, httpx.Unauthorized("bad key")
	}
	return &httpx.Principal{KeyID: "key_test", TeamID: "team"}, nil
}

// newTestServer serves a speech service built from opts behind the API
// server on loopback.
func newTestServer(t *testing.T, opts Options) (*httptest.Server, *Service) {
	t.Helper()
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	svc, err := NewService(opts, zerolog.Nop())
	require.NoError(t, err)
	srv := httptest.NewServer(api.New(zerolog.Nop(), testAuthorizer{}, []api.Module{svc}).Handler())
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, svc.Close())
	})
	return srv, svc
}

// postJSON posts body (a JSON string) with the test key.
func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer test-key")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// apiError reads the error body of resp.
func apiError(t *testing.T, resp *http.Response) httpx.Error {
	t.Helper()
	var body struct{ Error httpx.Error }
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &body), "body: %s", b)
	return body.Error
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// rms is the root mean square of pcm.
func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var s float64
	for _, v := range pcm {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(pcm)))
}

func bearer() http.Header {
	return http.Header{"Authorization": {"Bearer test-key"}}
}

// pcmBytes is pcm as the PCM16LE bytes the endpoints speak.
func pcmBytes(pcm []int16) []byte { return media.AppendPCM16LE(nil, pcm) }

// wavHeader is the header of a mono PCM16 WAV file of dataLen bytes.
func wavHeader(rate, dataLen int) []byte { return wav.Header(rate, uint32(dataLen)) }

// parseWAV reads a WAV the way a client would (media/wav).
func parseWAV(b []byte) ([]int16, int, error) {
	a, err := wav.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, 0, err
	}
	return a.Mono(), a.SampleRate, nil
}
