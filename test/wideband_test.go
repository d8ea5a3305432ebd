package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/call"
	"switchboard/media"
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
	t.Run("G722", func(t *testing.T) { testBaresipWideband(t, d, "G722") })
	// The control: the same caller offering only PCMU is heard in
	// narrowband, and the measure says so.
	t.Run("PCMU", func(t *testing.T) { testBaresipWideband(t, d, "PCMU") })
}

func testBaresipWideband(t *testing.T, d *apptest.Daemon, codec string) {
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	dir := t.TempDir()
	raw, speech := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	b, err := exec.Command("espeak-ng", "-v", "en-us+f5", "-w", raw, "Hello switchboard. This is a test of the wideband echo line. Six, seven, eight, nine, ten.").CombinedOutput()
	require.NoError(t, err, "%s", b)
	b, err = exec.Command("sox", raw, "-r", "16000", "-c", "1", "-b", "16", speech, "pad", "0.5", "2.5").CombinedOutput()
	require.NoError(t, err, "%s", b)
	// baresip 1.0's aufile source plays at the codec's rate.
	source := speech
	if codec == "PCMU" {
		source = filepath.Join(dir, "speech8k.wav")
		b, err = exec.Command("sox", speech, "-r", "8000", source).CombinedOutput()
		require.NoError(t, err, "%s", b)
	}

	module := "g722.so" // the caller has only this codec
	if codec == "PCMU" {
		module = "g711.so"
	}
	conf, rec := filepath.Join(dir, "conf"), filepath.Join(dir, "rec")
	require.NoError(t, os.MkdirAll(conf, 0o700))
	require.NoError(t, os.MkdirAll(rec, 0o700))
	config := strings.Join([]string{
		"module_path /usr/lib/baresip/modules",
		fmt.Sprintf("sip_listen 127.0.0.1:%d", freeUDPPort(t)),
		"audio_source aufile," + source,
		"audio_player alsa,null",
		"audio_alert alsa,null",
		"rtp_ports 32100-32199",
		"snd_path " + rec,
		"module account.so", "module menu.so", "module " + module, "module aufile.so", "module alsa.so", "module sndfile.so",
		"",
	}, "\n")
	require.NoError(t, os.WriteFile(filepath.Join(conf, "config"), []byte(config), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "accounts"), []byte("<sip:caller@127.0.0.1>;regint=0;audio_codecs="+codec+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "contacts"), nil, 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "baresip", "-f", conf, "-n", "127.0.0.1", "-t", "45", "-e", "/dial sip:14155550150@"+d.App.SIPAddr().String())
	cmd.Dir = dir
	var buf apptest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-waited
	}()
	c := liveCall(t, d)
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 40*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", tail(buf.String(), 3000))
	time.Sleep(500 * time.Millisecond)
	requireNoCalls(t, d)
	leg := c.Leg().(*call.SIPLeg)
	require.Equal(t, codec, leg.SIP().Offer().Codec.Name)
	wantRate := 8000
	if codec == "G722" {
		wantRate = 16000
	}
	require.Equal(t, wantRate, leg.Rate())

	decs, err := filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
	require.NoError(t, err)
	require.Len(t, decs, 1, "baresip's recording of the call: %s", tail(buf.String(), 3000))
	heard, rate, err := readWAV(decs[0])
	require.NoError(t, err)
	require.Equal(t, wantRate, rate, "baresip's decoder rate")
	said, _, err := readWAV(speech)
	require.NoError(t, err)
	if rate == 8000 {
		heard = media.Convert(heard, 8000, 16000)
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
	// echo keeps 0.054 to 0.064, the PCMU echo 0.0002.
	if codec == "G722" {
		require.Greater(t, heardShare, 0.5*saidShare, "the echo's upper band")
	} else {
		require.Less(t, heardShare, 0.1*saidShare, "a G.711 echo has no upper band")
	}
}
