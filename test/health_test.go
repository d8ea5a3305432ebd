package test

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media/wav"
)

// metricValue reads one sample of the metrics text (0 when absent).
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)$`).FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// TestHealthOneWaySipp: a sipp caller on a webhook number plays 7 s of
// speech, then sends no RTP while the call goes on. The call is flagged
// one-way: the controller gets switchboard.call.media_health naming the
// crossed threshold, the webhook gets a signed
// realtime.call.media_degraded, the one-way gauge and the degraded
// counter move while the call runs, and the record keeps it. The number
// records: once the call is over, a signed realtime.call.recording_ready
// names the recording, which holds the sipp caller's speech.
func TestHealthOneWaySipp(t *testing.T) {
	const number = "+14155550188"
	h := newHookReceiver(t, 0)
	d := controlDaemon(t, map[string]string{"SWITCHBOARD_RING_TIMEOUT": "10s", "SWITCHBOARD_HEALTH_ONE_WAY": "2s",
		"SWITCHBOARD_HEALTH_NO_AUDIO": "2s", "SWITCHBOARD_HEALTH_EVENT_INTERVAL": "2s"}, h, number)
	list := d.JSON(t, "GET", "/v2/phone-numbers", d.OwnerKey, nil, 200)
	for _, n := range list["phone_numbers"].([]any) {
		if n := n.(map[string]any); n["phone_number"] == number {
			d.JSON(t, "PATCH", "/v2/phone-numbers/"+n["phone_number_id"].(string), d.OwnerKey,
				map[string]any{"recording": map[string]any{"enabled": true}}, 200)
		}
	}
	run := startSipp(t, d, number, sippControl{Audio: true, ByeReason: "hung up by the API"}, 1, 1)
	id := h.next(t, "realtime.call.incoming", 5*time.Second).Data["call_id"].(string)
	c, status, body := dialController(t, wsURL(d, "?call_id="+id), bearer(d.OwnerKey))
	require.Equal(t, 101, status, "%s", body)
	answered := c.nextWhere(t, "switchboard.call.state", "state", "active", 5*time.Second)
	require.NotNil(t, answered)

	// While the pcap plays, the health events say the audio flows.
	ev := c.next(t, "switchboard.call.media_health", 5*time.Second)
	hl := ev["health"].(map[string]any)
	require.Equal(t, id, ev["call_id"])
	require.Empty(t, hl["degraded"], "degraded while the caller's audio flows: %v", hl)

	// The pcap ends after about 7 s: 2 s later the call is one-way.
	deg := h.next(t, "realtime.call.media_degraded", 20*time.Second)
	require.Equal(t, id, deg.Data["call_id"])
	reasons := map[string]bool{deg.Data["reason"].(string): true}
	// Both cross at about the same second; their webhooks may arrive in
	// either order.
	for !reasons["one_way_audio"] || !reasons["no_inbound_audio"] {
		reasons[h.next(t, "realtime.call.media_degraded", 5*time.Second).Data["reason"].(string)] = true
	}
	require.True(t, reasons["no_inbound_audio"])
	var crossed map[string]any
	for crossed == nil {
		ev := c.next(t, "switchboard.call.media_health", 10*time.Second)
		hl := ev["health"].(map[string]any)
		if hl["one_way"] == "no_caller_audio" {
			crossed = hl
		}
	}
	require.GreaterOrEqual(t, crossed["no_inbound_audio_ms"], 2000.0)
	require.Contains(t, crossed["degraded"], "one_way_audio")

	metrics := scrapeMetrics(t, d.URL)
	require.Equal(t, 1.0, metricValue(t, metrics, "switchboard_calls_one_way"), "the gauge shows the running one-way call")
	require.Equal(t, 1.0, metricValue(t, metrics, `switchboard_media_degraded_total{reason="one_way_audio"}`))
	require.Greater(t, metricValue(t, metrics, `switchboard_rtp_packets_total{direction="in"}`), 100.0, "RTP counted while the call runs")

	d.JSON(t, "POST", "/v1/realtime/calls/"+id+"/hangup", d.OwnerKey, nil, 200)
	run.wait(t, 10*time.Second)
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 5*time.Second, 50*time.Millisecond)
	metrics = scrapeMetrics(t, d.URL)
	require.Equal(t, 0.0, metricValue(t, metrics, "switchboard_calls_one_way"), "the ended call leaves the gauge")

	ready := h.next(t, "realtime.call.recording_ready", 10*time.Second)
	require.Equal(t, id, ready.Data["call_id"])
	require.Equal(t, "/v1/calls/"+id+"/recording", ready.Data["url"])
	require.Equal(t, "audio/wav", ready.Data["content_type"])
	require.Greater(t, ready.Data["duration_ms"], 7000.0)
	st, hdr, wavRaw := d.Do(t, "GET", ready.Data["url"].(string), d.OwnerKey, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "audio/wav", hdr.Get("Content-Type"))
	a, err := wav.Decode(bytes.NewReader(wavRaw))
	require.NoError(t, err)
	require.Greater(t, maxAbs(stereoChannel(a, 0)[:5*8000]), int16(1000), "the caller's pcap is on the left")
	require.EqualValues(t, len(wavRaw), ready.Data["bytes"])

	rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
	m := rec["media"].(map[string]any)
	require.Equal(t, true, m["one_way_seen"])
	require.Contains(t, m["degraded_seen"], "one_way_audio")
	require.Contains(t, m["degraded_seen"], "no_inbound_audio")
	noted := false
	for _, e := range rec["events"].([]any) {
		if e.(map[string]any)["kind"] == "media" && e.(map[string]any)["text"] == "one_way_audio" {
			noted = true
		}
	}
	require.True(t, noted, "the record's events note the crossing: %v", rec["events"])
}
