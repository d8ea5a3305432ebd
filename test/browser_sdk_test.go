package test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAgentsSDKWebRTCInChromium: the OpenAI Agents SDK's own browser
// bundle (the pinned @openai/agents-realtime of test/sdk), on a page of
// another origin in chromium, opens a RealtimeSession over its WebRTC
// transport with baseUrl pointed at the appliance and a client secret:
// it connects (its session.update acknowledged), its microphone's speech
// reaches the model and the echo engine's answer lands in its history.
func TestAgentsSDKWebRTCInChromium(t *testing.T) {
	requireBrowser(t)
	bundle := filepath.Join(filepath.Dir(browserDir(t)), "sdk", "node_modules", "@openai", "agents-realtime", "dist", "bundle", "openai-realtime-agents.umd.js")
	js, err := os.ReadFile(bundle)
	require.NoError(t, err, "the Agents SDK is not installed: run make deps (npm ci in test/sdk)")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sdk.js" {
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = w.Write(js)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>an app</title><script src="/sdk.js"></script><p>app</p>`))
	}))
	defer page.Close()
	d := webrtcDaemon(t)
	cs := d.JSON(t, "POST", "/v1/realtime/client_secrets", d.OwnerKey, map[string]any{"session": map[string]any{"type": "realtime", "model": "svc-voice-latest"}}, 200)
	wav, _ := fakeMicWAV(t, t.TempDir(), "Hello from the agents software development kit. One, two, three.")
	var res struct {
		CallID string   `json:"callId"`
		Events []string `json:"events"`
		Texts  []string `json:"texts"`
		Errors []string `json:"errors"`
		Status string   `json:"status"`
	}
	runBrowser(t, map[string]any{"kind": "sdk", "page": page.URL, "url": d.URL, "token": cs["value"], "model": "svc-voice-latest",
		"wav": wav, "seconds": 25}, 90*time.Second, &res)
	t.Logf("SDK: call %s, status %s, assistant %q, errors %v, %d events", res.CallID, res.Status, res.Texts, res.Errors, len(res.Events))
	require.Regexp(t, `^[0-9a-f-]{36}$`, res.CallID, "the SDK read the call id from Location")
	require.Equal(t, "connected", res.Status)
	require.Contains(t, res.Events, "session.updated", "the SDK's session.update was acknowledged")
	require.Contains(t, res.Events, "input_audio_buffer.speech_started", "the microphone's speech reached the model")
	require.True(t, func() bool {
		for _, s := range res.Texts {
			if strings.Contains(s, "echo") {
				return true
			}
		}
		return false
	}(), "the echo engine's answer is in the SDK's history: %v", res.Texts)
	require.Empty(t, res.Errors)
	rec := d.JSON(t, "GET", "/v1/calls/"+res.CallID, d.OwnerKey, nil, 200)
	require.Equal(t, "webrtc", rec["channel"])
	require.Equal(t, "session", rec["route"])
}
