package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// baresipConf is a throw-away configuration of baresip 1.0: its
// microphone is a WAV file (the aufile module; it hangs up when the file
// ends), and the sndfile module dumps what it hears (dump-*-dec.wav) and
// sends (-enc) into its rec directory.
type baresipConf struct {
	user      string // the account's user; "caller" when empty
	transport string // the account's transport: "" (UDP), "tcp" or "tls"
	source    string // the WAV its microphone plays, at the codec's rate
	codec     string // its one codec: "PCMU" (when empty), "G722" or "opus"
	answer    bool   // answers every call at once (answermode=auto)
	srtp      bool   // SRTP mandatory (SDES keys)
	cert      string // sip_certificate (its TLS certificate and key)
	// strict loads the account after the codec and the SRTP module, so
	// that its audio_codecs and mediaenc apply (they name modules loaded
	// before it): it offers and answers the one codec. Otherwise (and as
	// the tests measured their figures) the account loads first and
	// offers every codec of the module (g711: PCMU and PCMA). With srtp,
	// always strict.
	strict bool
}

// baresip is a running baresip.
type baresip struct {
	rec  string    // what it heard and sent
	port int       // its SIP port: UDP and TCP; TLS is the port above
	rtp  portRange // its own RTP ports
	out  *apptest.SyncBuffer
	// stop interrupts it and waits for it (its dumps are whole then); it
	// may be called more than once, and is called at the test's end.
	stop func()
}

// baresipCodecs are baresip's module and account name of each codec.
var baresipCodecs = map[string][2]string{
	"PCMU": {"g711.so", "PCMU"},
	"G722": {"g722.so", "G722"},
	"opus": {"opus.so", "opus/48000/1"},
}

// launchBaresip writes c into dir (conf/ and rec/) and starts baresip
// there, on a free SIP port and an RTP range of its own: it types dial
// (when set) into its menu, and quits after quit.
func launchBaresip(t *testing.T, dir string, c baresipConf, dial string, quit time.Duration) *baresip {
	t.Helper()
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	if c.user == "" {
		c.user = "caller"
	}
	if c.codec == "" {
		c.codec = "PCMU"
	}
	codec, ok := baresipCodecs[c.codec]
	require.True(t, ok, "baresip codec %s", c.codec)
	conf := filepath.Join(dir, "conf")
	b := &baresip{rec: filepath.Join(dir, "rec"), port: freeBaresipPort(t), rtp: takePorts(t, 40), out: &apptest.SyncBuffer{}}
	require.NoError(t, os.MkdirAll(conf, 0o700))
	require.NoError(t, os.MkdirAll(b.rec, 0o700))
	lines := []string{
		"module_path /usr/lib/baresip/modules",
		fmt.Sprintf("sip_listen 127.0.0.1:%d", b.port),
		"audio_source aufile," + c.source,
		"audio_player alsa,null",
		"audio_alert alsa,null",
		"rtp_ports " + b.rtp.String(),
		"snd_path " + b.rec,
		"opus_bitrate 32000", "opus_stereo no", "opus_sprop_stereo no", "opus_inbandfec yes",
	}
	if c.cert != "" {
		lines = append(lines, "sip_certificate "+c.cert)
	}
	modules := []string{"menu.so", codec[0], "aufile.so", "alsa.so", "sndfile.so"}
	if c.srtp {
		modules = append(modules, "srtp.so")
	}
	// account.so reads the accounts when it loads.
	if c.strict || c.srtp {
		modules = append(modules, "account.so")
	} else {
		modules = append([]string{"account.so"}, modules...)
	}
	for _, m := range modules {
		lines = append(lines, "module "+m)
	}
	require.NoError(t, os.WriteFile(filepath.Join(conf, "config"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	uri := "sip:" + c.user + "@127.0.0.1"
	if c.transport != "" {
		uri += ";transport=" + c.transport
	}
	account := fmt.Sprintf("<%s>;regint=0;audio_codecs=%s", uri, codec[1])
	if c.answer {
		account += ";answermode=auto"
	}
	if c.srtp {
		account += ";mediaenc=srtp-mand"
	}
	require.NoError(t, os.WriteFile(filepath.Join(conf, "accounts"), []byte(account+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "contacts"), nil, 0o600))

	// -n keeps its SDP (c=) on loopback.
	ctx, cancel := context.WithTimeout(context.Background(), quit+15*time.Second)
	args := []string{"-f", conf, "-n", "127.0.0.1", "-t", fmt.Sprint(int(quit.Seconds()))}
	if dial != "" {
		args = append(args, "-e", "/dial "+dial)
	}
	cmd := exec.CommandContext(ctx, "baresip", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = b.out, b.out
	if err := cmd.Start(); err != nil {
		cancel()
		require.NoError(t, err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			<-waited
			cancel()
		})
	}
	t.Cleanup(b.stop)
	return b
}
