package test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
	"switchboard/media"
	"switchboard/media/wav"
	"switchboard/sipleg"
)

// upperBandShare is the fraction of a 16 kHz signal's energy above 4 kHz:
// what a G.711 path cannot carry.
func upperBandShare(pcm []int16) float64 {
	low := media.Convert(media.Convert(pcm, 16000, 8000), 8000, 16000)
	var hi, all float64
	for i, s := range pcm {
		d := float64(s) - float64(low[i])
		hi += d * d
		all += float64(s) * float64(s)
	}
	if all == 0 {
		return 0
	}
	return hi / all
}

// TestBaresipG722Wideband: baresip calls with G.722 only (its g722
// module), plays 16 kHz speech and records what it hears. The call is
// answered in G.722, the echo comes back, and what baresip hears has the
// speech's energy above 4 kHz: the audio went from the caller to the
// model (24 kHz) and back without passing through 8 kHz.
func TestBaresipG722Wideband(t *testing.T) {
	d := callDaemon(t, nil)
	t.Run("G722", func(t *testing.T) {
		c := testBaresipWideband(t, d, "G722", recordedLineTest(t, d, "+14155550153"))
		requireTapsHeard(t, d, c)
	})
	// The control: the same caller offering only PCMU is heard in
	// narrowband, and the measure says so.
	t.Run("PCMU", func(t *testing.T) { testBaresipWideband(t, d, "PCMU", lineTestNumber) })
}

// TestBaresipOpusWideband: baresip calls with Opus only (its opus
// module, opus/48000/2 with telephone-event/8000): the call is answered in
// Opus, the leg decodes at 24 kHz, the echo comes back and what baresip
// hears keeps the speech's energy above 4 kHz. The call's taps work: its
// media health heard both sides and its recording holds the caller's
// speech (left) and the echo (right).
func TestBaresipOpusWideband(t *testing.T) {
	d := callDaemon(t, nil)
	c := testBaresipWideband(t, d, "opus", recordedLineTest(t, d, "+14155550152"))
	requireTapsHeard(t, d, c)
}

// recordedLineTest makes number a line test (the loopback engine) whose
// calls are recorded.
func recordedLineTest(t *testing.T, d *apptest.Daemon, number string) string {
	t.Helper()
	ag := d.JSON(t, "POST", "/v1/agents", d.OwnerKey, map[string]any{"name": "recorded line test " + number, "engine": "loopback",
		"recording": map[string]any{"enabled": true}}, 200)
	d.JSON(t, "POST", "/v2/phone-numbers", d.OwnerKey, map[string]any{"origin": "byo_trunk", "name": "recorded line test",
		"phone_number": number, "agent_id": ag["agent_id"]}, 200)
	return number
}

// requireTapsHeard checks a wideband call's taps: its media health heard
// both sides and its recording holds the caller's speech (left) and the
// echo (right).
func requireTapsHeard(t *testing.T, d *apptest.Daemon, c *call.Call) {
	t.Helper()
	h := c.Snapshot().Health
	t.Logf("health: %+v", h)
	require.False(t, h.OneWaySeen, "audio both ways")
	require.Less(t, h.CallerSilenceMS, int64(8000), "the caller's speech was heard by the health tap")
	require.Less(t, h.AgentSilenceMS, int64(8000), "the echo sent was seen by the health tap")
	require.GreaterOrEqual(t, h.FirstAudioMS, int64(0))

	var raw []byte
	require.Eventually(t, func() bool {
		var status int
		status, _, raw = d.Do(t, "GET", "/v1/calls/"+c.ID()+"/recording", d.OwnerKey, nil)
		return status == 200
	}, 10*time.Second, 100*time.Millisecond, "no recording")
	a, err := wav.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 2, a.Channels)
	require.Equal(t, 8000, a.SampleRate)
	left, right := rms(stereoChannel(a, 0)), rms(stereoChannel(a, 1))
	t.Logf("recording: %.1f s, rms caller %.0f, agent %.0f", float64(a.Frames())/8000, left, right)
	require.Greater(t, left, 300.0, "the caller's speech is in the recording")
	require.Greater(t, right, 300.0, "the echo is in the recording")
}

func testBaresipWideband(t *testing.T, d *apptest.Daemon, codec, number string) *call.Call {
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	dir := t.TempDir()
	raw, speech := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	b, err := exec.Command("espeak-ng", "-v", "en-us+f5", "-w", raw, "Hello switchboard. This is a test of the wideband echo line. Six, seven, eight, nine, ten.").CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "16000", "-c", "1", "-b", "16", speech, "pad", "0.5", "2.5").CombinedOutput()
	require.NoError(t, err, "%s", b)
	// baresip 1.0's aufile source plays at the codec's rate and
	// channels: 8 kHz for PCMU, 16 kHz for G.722, 48 kHz for Opus (mono:
	// opus_stereo no).
	source := speech
	switch codec {
	case "PCMU":
		source = filepath.Join(dir, "speech8k.wav")
		b, err = exec.Command("sox", speech, "-r", "8000", source).CombinedOutput()
		require.NoError(t, err, "%s", b)
	case "opus":
		source = filepath.Join(dir, "speech48k.wav")
		b, err = exec.Command("sox", speech, "-r", "48000", source).CombinedOutput()
		require.NoError(t, err, "%s", b)
	}

	// The caller has only this codec.
	peer := launchBaresip(t, dir, baresipConf{source: source, codec: codec}, "sip:"+strings.TrimPrefix(number, "+")+"@"+d.App.SIPAddr().String(), 45*time.Second)
	buf, rec, stopBaresip := peer.out, peer.rec, peer.stop
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("baresip: %s\ndaemon: %s", tail(buf.String(), 3000), tail(d.Logs.String(), 4000))
		}
	})
	c := liveCall(t, d)
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 40*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", tail(buf.String(), 3000))
	stopBaresip() // its recording of the call is whole once it exited
	requireNoCalls(t, d)
	leg := c.Leg().(*sipleg.Leg)
	require.Equal(t, codec, leg.SIP().Offer().Codec.Name)
	wantRate, heardRate := 8000, 8000
	switch codec {
	case "G722":
		wantRate, heardRate = 16000, 16000
	case "opus":
		wantRate, heardRate = 24000, 48000 // decoded at the model's rate; baresip decodes at 48 kHz
	}
	require.Equal(t, wantRate, leg.Audio().Format().Rate)

	decs, err := filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
	require.NoError(t, err)
	require.Len(t, decs, 1, "baresip's recording of the call: %s", tail(buf.String(), 3000))
	heard, rate, err := readWAV(decs[0])
	require.NoError(t, err)
	require.Equal(t, heardRate, rate, "baresip's decoder rate")
	said, _, err := readWAV(speech)
	require.NoError(t, err)
	if rate != 16000 {
		heard = media.Convert(heard, rate, 16000)
	}

	// The echo: the same speech-window search as the narrowband tests,
	// on the 8 kHz envelope of both.
	said8, heard8 := media.Convert(said, 16000, 8000), media.Convert(heard, 16000, 8000)
	windows, matched, median := echoWindows(said8, heard8, 0, 2*8000, 0.7)
	rev := make([]int16, len(said8))
	for i, v := range said8 {
		rev[len(said8)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard8, 0, 2*8000, 0.7)
	saidShare, heardShare := upperBandShare(said), upperBandShare(heard)
	t.Logf("%s: %d/%d speech windows matched, median lag %v, control %d/%d; energy above 4 kHz: said %.4f, heard %.4f; stats %+v",
		codec, matched, windows, time.Duration(median)*time.Second/8000, ctlMatched, ctlWindows, saidShare, heardShare, c.Snapshot().Media)
	requireEcho(t, 10, windows, matched, median, ctlWindows, ctlMatched)
	// Measured: the speech has 0.074 of its energy above 4 kHz; the G.722
	// echo keeps 0.054 to 0.064, the PCMU echo 0.0002. Opus, a perceptual
	// codec coded twice (baresip's encoder and ours, 32 kbit/s each),
	// keeps 0.034 to 0.035 (0.048 with the caller at 64 kbit/s): less than
	// a waveform codec, a hundred times what G.711 carries.
	switch codec {
	case "G722":
		require.Greater(t, heardShare, 0.5*saidShare, "the echo's upper band")
	case "opus":
		require.Greater(t, heardShare, 0.3*saidShare, "the echo's upper band")
	default:
		require.Less(t, heardShare, 0.1*saidShare, "a G.711 echo has no upper band")
	}
	return c
}
