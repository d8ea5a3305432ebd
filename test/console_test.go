package test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsoleInChromium walks the web console in Debian's chromium: sign
// in with the owner key, the demo number listed, an agent created, "Talk
// to this agent" (a browser call with the fake microphone) heard back,
// the live view pushing both that call and a phone call in progress with
// their transcripts, the call records, API keys and the audit log; then a
// key that may only read calls sees only that. After every sign-in and
// every step no page shows or logs an error but those the step expects
// (runBrowser). Each page's screenshot is kept as an artefact
// (artefactDir) for a person to look at.
func TestConsoleInChromium(t *testing.T) {
	requireBrowser(t)
	d := webrtcDaemon(t)
	shots := artefactDir(t)
	dir := t.TempDir()
	wav, _ := fakeMicWAV(t, dir, "Hello console. This is the browser talking to the demo agent.")
	limited := d.JSON(t, "POST", "/auth/teams/default/api-keys", d.OwnerKey, map[string]any{"name": "calls reader", "acls": []string{"api-key:endpoint:calls"}}, 200)
	// The demo agent records its calls, so the call page plays one back.
	demo := ""
	for _, a := range d.JSON(t, "GET", "/v1/agents", d.OwnerKey, nil, 200)["agents"].([]any) {
		if a := a.(map[string]any); a["name"] == "Demo agent" {
			demo = a["agent_id"].(string)
		}
	}
	require.NotEmpty(t, demo, "the demo agent is seeded")
	d.JSON(t, "PATCH", "/v1/agents/"+demo, d.OwnerKey, map[string]any{"recording": map[string]any{"enabled": true}}, 200)

	// A phone call in progress for the live view, playing speech; it lasts
	// until the test ends (the dial is killed then), so the tour finds it
	// live however slow the machine is (at 60 s it had ended on a loaded one).
	phone := startDial(t, sipTarget(d.App.SIPAddr(), "+18005550100"), "--duration", "10m", "--play", paddedSpeechWAV(t, dir), "--from", "console-phone")
	phone.waitLine(t, "first RTP in")

	var seen struct {
		Shots          []string `json:"shots"`
		LiveStreams    int      `json:"liveStreamsAtSignIn"`
		URLs           []string `json:"urls"`
		KeyInStorage   int      `json:"keyInStorage"`
		Who            string   `json:"who"`
		Numbers        string   `json:"numbers"`
		NumbersAfter   string   `json:"numbersAfter"`
		Agents         string   `json:"agents"`
		Talk           string   `json:"talk"`
		Live           string   `json:"live"`
		LiveStatus     string   `json:"liveStatus"`
		Calls          string   `json:"calls"`
		Call           string   `json:"call"`
		RecordingSecs  float64  `json:"recordingSeconds"`
		Keys           string   `json:"keys"`
		Audit          string   `json:"audit"`
		LimitedNav     []string `json:"limitedNav"`
		LimitedNumbers string   `json:"limitedNumbers"`
		LimitedKeys    string   `json:"limitedKeys"`
	}
	runBrowser(t, map[string]any{"kind": "console", "url": d.URL, "key": d.OwnerKey, "limitedKey": limited["apiKey"],
		"wav": wav, "shots": shots, "agentName": "Console test agent", "liveCalls": 2, "newNumber": "+14155550199"}, 3*time.Minute, &seen)

	require.Contains(t, seen.Who, "team default")
	require.Equal(t, 1, seen.LiveStreams, "a sign-in renders its page once")
	require.Zero(t, seen.KeyInStorage, "the key stays in memory unless asked")
	for _, u := range seen.URLs {
		require.NotContains(t, u, d.OwnerKey, "the key never goes into a URL")
	}
	require.Contains(t, seen.Numbers, "+18005550100", "the demo number is listed")
	require.Contains(t, seen.NumbersAfter, "+14155550199", "a number was created")
	require.Contains(t, seen.NumbersAfter, "digest user pbx", "the demo number got SIP credentials")
	require.NotContains(t, seen.NumbersAfter, "console-secret-1", "the digest password is never shown")
	require.Contains(t, seen.NumbersAfter, "outbound via sip:127.0.0.1:5099", "the demo number got an outbound trunk")
	require.NotContains(t, seen.NumbersAfter, "console-outbound-2", "the outbound password is never shown")
	require.Contains(t, seen.NumbersAfter, "console-ext@sip:127.0.0.1:9 (udp): ", "the demo number registers, and its state shows")
	require.NotContains(t, seen.NumbersAfter, "console-reg-3", "the registration password is never shown")
	require.Contains(t, seen.Agents, "Console test agent", "the new agent is listed")
	require.Contains(t, seen.Talk, "Demo agent:", "the agent's words come over the data channel")
	require.Equal(t, "live", seen.LiveStatus)
	require.Contains(t, seen.Live, "console-phone", "the phone call is live")
	require.Contains(t, seen.Live, "Browser", "the console's own call is live")
	require.Contains(t, seen.Live, "webrtc")
	require.Contains(t, seen.Live, "Agent:", "live transcripts")
	require.Contains(t, seen.Calls, "webrtc")
	require.Contains(t, seen.Call, "Transcript")
	require.Contains(t, seen.Call, "turn latency", "the media summary")
	require.Greater(t, seen.RecordingSecs, 2.0, "the call page loads the recording with the key and the browser plays it")
	require.Contains(t, seen.Keys, "calls reader")
	require.Contains(t, seen.Audit, "agent.create")
	require.ElementsMatch(t, []string{"live", "calls", "keys", "audit"}, seen.LimitedNav, "a calls-only key sees the calls pages (keys and audit answer for themselves)")
	require.Contains(t, seen.LimitedNumbers, "no permission")
	require.Contains(t, seen.LimitedKeys, "management key")
	require.Len(t, seen.Shots, 10)
	for _, s := range seen.Shots {
		st, err := os.Stat(s)
		require.NoError(t, err)
		require.Greater(t, st.Size(), int64(5000), "a screenshot with something in it: %s", s)
	}
	t.Logf("screenshots: %s", strings.Join(seen.Shots, " "))
}
