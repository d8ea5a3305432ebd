package speech

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCustomVoices: GET /v1/custom-voices answers the spec's voice list
// shape with the voices the appliance can speak (each one a voice_id
// POST /v1/tts takes); creating one is not served (405 with Allow).
func TestCustomVoices(t *testing.T) {
	srv, _ := newTestServer(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/custom-voices", nil)
	req.Header = bearer()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var body struct {
		Voices []struct {
			VoiceID string `json:"voice_id"`
			Name    string `json:"name"`
		} `json:"voices"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Len(t, body.Voices, len(Voices))
	for _, v := range body.Voices {
		require.NotEmpty(t, v.Name)
		_, ok := LookupVoice(v.VoiceID)
		require.True(t, ok, "%s is a voice the appliance speaks", v.VoiceID)
	}
	post := postJSON(t, srv.URL+"/v1/custom-voices", `{"name":"mine"}`)
	require.Equal(t, http.StatusMethodNotAllowed, post.StatusCode)
	require.Equal(t, "GET", post.Header.Get("Allow"))
}
