package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/media/wav"
)

// stereoChannel returns one channel of a stereo recording.
func stereoChannel(a *wav.Audio, ch int) []int16 {
	out := make([]int16, a.Frames())
	for i := range out {
		out[i] = a.Samples[i*a.Channels+ch]
	}
	return out
}

// bestMatch finds ref's envelope in got between lags from and to (frames)
// and returns the best lag and its correlation.
func bestMatch(ref, got []float64, from, to int) (int, float64) {
	lag, best := 0, -1.0
	for l := from; l <= to; l++ {
		if c := agentNCC(ref, got, l); c > best {
			lag, best = l, c
		}
	}
	return lag, best
}

// TestRecordingBaresipStereo: baresip calls an echo agent that records;
// the WAV served by GET /v1/calls/{id}/recording is stereo, its left
// channel carries what baresip said and its right channel the greeting
// and the echo of it, in time order; Range requests work; the record has
// the turn latency of the echo.
func TestRecordingBaresipStereo(t *testing.T) {
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), nil))
	const number = "+14155550177"
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "recorded", "greeting": "Hello, this call is recorded.",
		"recording": map[string]any{"enabled": true}}, 200)
	require.Equal(t, map[string]any{"enabled": true}, ag["recording"])
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "rec", "phone_number": number,
		"agent_id": ag["agent_id"]}, 200)

	dir := t.TempDir()
	const pre, post = 4.5, 5.0
	source, utt := agentWAVs(t, dir, "Testing one, two, three.", pre, post)
	_, out, _ := agentBaresipDial(t, dir, source, "sip:"+number+"@"+d.App.SIPAddr().String(), 20*time.Second)
	var id string
	require.Eventually(t, func() bool {
		for _, c := range d.App.Calls().List() {
			id = c.ID()
		}
		return id != ""
	}, 30*time.Second, 20*time.Millisecond, "no call: %s\n%s", out.String(), tail(d.Logs.String(), 3000))
	// While the call runs the recording is served as far as it is written.
	require.Eventually(t, func() bool {
		status, _, raw := d.Do(t, "GET", "/v1/calls/"+id+"/recording", d.OwnerKey, nil)
		return status == 200 && len(raw) > 44+8000*4
	}, 10*time.Second, 200*time.Millisecond, "no live recording")
	st, _, _ := d.Do(t, "DELETE", "/v1/calls/"+id+"/recording", d.OwnerKey, nil)
	require.Equal(t, http.StatusConflict, st, "a recording in progress cannot be deleted")
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 20*time.Second, 50*time.Millisecond,
		"baresip did not hang up: %s", out.String())

	var raw []byte
	require.Eventually(t, func() bool {
		var status int
		var h http.Header
		status, h, raw = d.Do(t, "GET", "/v1/calls/"+id+"/recording", d.OwnerKey, nil)
		return status == 200 && h.Get("Content-Type") == "audio/wav"
	}, 5*time.Second, 100*time.Millisecond)
	a, err := wav.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 2, a.Channels)
	require.Equal(t, 8000, a.SampleRate)
	left, right := agentRMS(stereoChannel(a, 0)), agentRMS(stereoChannel(a, 1))
	uttEnv := agentRMS(utt)
	uttStart := int(pre * 50)

	// Left: the caller's sentence, where baresip said it.
	lLag, lCorr := bestMatch(uttEnv, left, uttStart-50, uttStart+200)
	// Right: the greeting from the answer, then the echo after the
	// sentence ended.
	first := -1
	for i, v := range right {
		if v > 100 {
			first = i
			break
		}
	}
	rLag, rCorr := bestMatch(uttEnv, right, lLag+len(uttEnv)-25, lLag+len(uttEnv)+150)
	t.Logf("recording %.1f s: caller's sentence at %.2f s (corr %.3f), greeting from %.2f s, echo at %.2f s (corr %.3f)",
		float64(a.Frames())/8000, float64(lLag)/50, lCorr, float64(first)/50, float64(rLag)/50, rCorr)
	require.Greater(t, lCorr, 0.8, "the left channel does not carry what the caller said")
	require.GreaterOrEqual(t, first, 0)
	require.Less(t, first, 25, "the greeting starts within half a second of the answer")
	require.Greater(t, rCorr, 0.8, "the right channel does not carry the echo")
	// Nothing of the agent leaks into the caller's channel and back.
	_, cross := bestMatch(uttEnv, left, rLag-5, rLag+5)
	require.Less(t, cross, 0.5, "the echo is on the caller's channel too")

	// Range requests.
	req, _ := http.NewRequest(http.MethodGet, d.URL+"/v1/calls/"+id+"/recording", nil)
	req.Header.Set("Authorization", "Bearer "+d.OwnerKey)
	req.Header.Set("Range", "bytes=44-1043")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	part, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, raw[44:1044], part)

	// The record: turn latency of the echo, first audio, no one-way.
	rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
	m := rec["media"].(map[string]any)
	tl := m["turn_latency"].(map[string]any)
	t.Logf("media: first_audio_ms %v, turn_latency %v, barge_ins %v, caller_silence_ms %v, agent_silence_ms %v",
		m["first_audio_ms"], tl, m["barge_ins"], m["caller_silence_ms"], m["agent_silence_ms"])
	require.GreaterOrEqual(t, tl["count"], 1.0)
	require.Greater(t, tl["p50_ms"], 300.0, "the echo engine waits for 500 ms of silence")
	require.Less(t, tl["max_ms"], 3000.0)
	require.GreaterOrEqual(t, m["first_audio_ms"], 0.0)
	require.Less(t, m["first_audio_ms"], 500.0)
	require.Equal(t, false, m["one_way_seen"])
	require.Equal(t, map[string]any{"url": "/v1/calls/" + id + "/recording"}, rec["recording"])

	// The metrics moved.
	metrics := scrapeMetrics(t, d.URL)
	require.Contains(t, metrics, "switchboard_turn_latency_seconds_count 1")
	require.Contains(t, metrics, `switchboard_recordings_total{result="ok"} 1`)

	// DELETE, then it is gone; another team's key and unknown calls get 404.
	st, _, _ = d.Do(t, "DELETE", "/v1/calls/"+id+"/recording", d.OwnerKey, nil)
	require.Equal(t, http.StatusNoContent, st)
	st, _, _ = d.Do(t, "GET", "/v1/calls/"+id+"/recording", d.OwnerKey, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, _, _ = d.Do(t, "GET", "/v1/calls/00000000-0000-0000-0000-000000000000/recording", d.OwnerKey, nil)
	require.Equal(t, http.StatusNotFound, st)
	st, _, _ = d.Do(t, "GET", "/v1/calls/"+id+"/recording", "", nil)
	require.Equal(t, http.StatusUnauthorized, st)
}

// scrapeMetrics returns the text of /metrics.
func scrapeMetrics(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestRecordingSurvivesSIGKILL: a recorded call in progress when the
// daemon is SIGKILLed leaves a playable WAV up to its last second; an
// encrypted one is served, decrypted, by the next start.
func TestRecordingSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	for _, encrypt := range []bool{false, true} {
		t.Run(fmt.Sprintf("encrypt=%t", encrypt), func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			env := []string{fmt.Sprintf("SWITCHBOARD_RECORDING_ENCRYPT=%t", encrypt)}
			d := startBinary(t, dataDir, env...)
			// The demo number records.
			nums := binaryJSON(t, d, "GET", "/v2/phone-numbers", nil)
			var numID string
			for _, n := range nums["phone_numbers"].([]any) {
				if m := n.(map[string]any); m["phone_number"] == demoNumber {
					numID, _ = m["id"].(string)
					if numID == "" {
						numID, _ = m["phone_number_id"].(string)
					}
				}
			}
			require.NotEmpty(t, numID)
			pn := binaryJSON(t, d, "PATCH", "/v2/phone-numbers/"+numID, map[string]any{"recording": map[string]any{"enabled": true}})
			require.Equal(t, map[string]any{"enabled": true}, pn["phone_number"].(map[string]any)["recording"])

			long := pcmaCall("recorded-crash", 200)
			long.Play, long.PauseMs = g711aPcap, 60000
			sipp := exec.Command("sipp", d.sip.String(), "-sf", render(t, "call.xml.tmpl", long), "-s", demoNumber,
				"-m", "1", "-i", "127.0.0.1", "-p", fmt.Sprint(freeUDPPort(t)), "-mp", fmt.Sprint(freeUDPPort(t)), "-t", "u1",
				"-nostdin", "-timeout", "90s")
			sipp.Dir = t.TempDir()
			require.NoError(t, sipp.Start())
			t.Cleanup(func() { sipp.Process.Kill(); sipp.Wait() })
			var id string
			require.Eventually(t, func() bool {
				calls := d.calls(t, "?state=active")
				if len(calls) == 1 {
					id = calls[0]["call_id"].(string)
				}
				return id != ""
			}, 20*time.Second, 50*time.Millisecond)
			ext := ".wav"
			if encrypt {
				ext = ".wav.sealed"
			}
			file := filepath.Join(dataDir, "recordings", id+ext)
			// Seconds of the call are recorded (real RTP) before the crash:
			// the file on disk holds 3 s of stereo 8 kHz PCM16 (sealed: a
			// little more).
			require.Eventually(t, func() bool {
				fi, err := os.Stat(file)
				return err == nil && fi.Size() >= 44+3*8000*4
			}, 20*time.Second, 20*time.Millisecond, "the recording grows on disk")
			d.kill()
			fileRaw, err := os.ReadFile(file)
			require.NoError(t, err)
			var body []byte
			if encrypt {
				require.False(t, bytes.Contains(fileRaw, []byte("RIFF")), "sealed at rest")
				d2 := startBinary(t, dataDir, env...)
				req, _ := http.NewRequest("GET", d2.url+"/v1/calls/"+id+"/recording", nil)
				req.Header.Set("Authorization", "Bearer "+d2.ownerKey)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				require.Equal(t, 200, resp.StatusCode, "%s", body)
			} else {
				body = fileRaw
			}
			// A reader that trusts the header gets at least 2 s of stereo
			// audio, and the header never claims more than the file holds.
			a, err := wav.Decode(bytes.NewReader(body))
			require.NoError(t, err)
			require.Equal(t, 2, a.Channels)
			secs := float64(a.Frames()) / 8000
			t.Logf("after SIGKILL with 3 s on disk: %d bytes, header says %.2f s", len(body), secs)
			require.GreaterOrEqual(t, secs, 2.0)
			require.LessOrEqual(t, int64(44+a.Frames()*4), int64(len(body)))
			require.Greater(t, maxAbs(stereoChannel(a, 0)), int16(1000), "the caller's pcap is on the left")
		})
	}
}

func maxAbs(s []int16) int16 {
	var m int16
	for _, v := range s {
		if v < 0 {
			v = -v
		}
		m = max(m, v)
	}
	return m
}

// binaryJSON calls the binary daemon's API with the owner key.
func binaryJSON(t *testing.T, d *binaryDaemon, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, d.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+d.ownerKey)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, path, raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return out
}
