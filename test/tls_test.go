package test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
)

// peerCN returns the common name of the certificate the server at url
// presents, trusting only the given certificate files.
func peerCN(t *testing.T, url string, trust ...string) (string, error) {
	t.Helper()
	c := apptest.TrustingClient(t, trust...)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	resp, err := c.Get(url + "/healthz")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	return resp.TLS.PeerCertificates[0].Subject.CommonName, nil
}

// replace writes the pair (cert, key) over (dstCert, dstKey) the way a
// renewal tool does: a new file renamed into place.
func replace(t *testing.T, cert, key, dstCert, dstKey string) {
	t.Helper()
	for _, p := range [][2]string{{cert, dstCert}, {key, dstKey}} {
		b, err := os.ReadFile(p[0])
		require.NoError(t, err)
		tmp := p[1] + ".new"
		require.NoError(t, os.WriteFile(tmp, b, 0o600))
		require.NoError(t, os.Rename(tmp, p[1]))
	}
}

// TestHTTPSCertificateReload serves the API over HTTPS, then renews the
// certificate files: the next handshakes present the new certificate
// without a restart. A renewal that does not load leaves the old one in
// service.
func TestHTTPSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certA, keyA := apptest.SelfSigned(t, dir, "first")
	certB, keyB := apptest.SelfSigned(t, dir, "second")
	live, liveKey := filepath.Join(dir, "live.crt"), filepath.Join(dir, "live.key")
	replace(t, certA, keyA, live, liveKey)

	cfg := apptest.Config(t, filepath.Join(dir, "data"), map[string]string{"SWITCHBOARD_HTTP_TLS_CERT": live, "SWITCHBOARD_HTTP_TLS_KEY": liveKey})
	d := apptest.Start(t, cfg)
	require.Regexp(t, `^https://127\.0\.0\.1:\d+$`, d.URL)
	cn, err := peerCN(t, d.URL, certA)
	require.NoError(t, err)
	require.Equal(t, "first", cn)
	// Plain HTTP on the TLS port is refused, not served.
	resp, err := http.Get("http://" + d.App.HTTPAddr() + "/healthz")
	if err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	}

	// File change: picked up by a handshake within a second or two.
	replace(t, certB, keyB, live, liveKey)
	require.Eventually(t, func() bool {
		cn, err := peerCN(t, d.URL, certB)
		return err == nil && cn == "second"
	}, 5*time.Second, 100*time.Millisecond)
	_, err = peerCN(t, d.URL, certA)
	require.Error(t, err, "the old certificate is no longer served")

	// A broken renewal (key of another certificate) keeps the current one.
	replace(t, certA, keyB, live, liveKey)
	require.Error(t, d.App.ReloadTLS())
	// A handshake looks at the files at most once a second of the daemon's
	// real clock (certCheckInterval): the next one that does comes after it.
	time.Sleep(1100 * time.Millisecond)
	cn, err = peerCN(t, d.URL, certB)
	require.NoError(t, err)
	require.Equal(t, "second", cn)

	// Explicit reload (what SIGHUP does).
	replace(t, certA, keyA, live, liveKey)
	require.NoError(t, d.App.ReloadTLS())
	cn, err = peerCN(t, d.URL, certA)
	require.NoError(t, err)
	require.Equal(t, "first", cn)
}

// TestHTTPSBadCertificateRefusesToStart: a daemon whose certificate does
// not load does not start, rather than serving plain HTTP.
func TestHTTPSBadCertificateRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	certA, _ := apptest.SelfSigned(t, dir, "a")
	_, keyB := apptest.SelfSigned(t, dir, "b")
	cmd := exec.Command(binary, "serve", "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0", "--log-format", "json",
		"--http-tls-cert", certA, "--http-tls-key", keyB)
	cmd.Env = []string{"SWITCHBOARD_DATA_DIR=" + filepath.Join(dir, "data")}
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "tls certificate")
	cmd = exec.Command(binary, "serve", "--http-tls-cert", certA)
	cmd.Env = []string{"SWITCHBOARD_DATA_DIR=" + filepath.Join(dir, "data")}
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "http.tls_cert and http.tls_key")
}

// TestServeSIGHUPReloadsCertificate runs the binary over HTTPS and renews
// its certificate with SIGHUP, as an operator's renewal hook does.
func TestServeSIGHUPReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	certA, keyA := apptest.SelfSigned(t, dir, "first")
	certB, keyB := apptest.SelfSigned(t, dir, "second")
	live, liveKey := filepath.Join(dir, "live.crt"), filepath.Join(dir, "live.key")
	replace(t, certA, keyA, live, liveKey)
	cmd := exec.Command(binary, "serve", "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:0", "--log-format", "json",
		"--http-tls-cert", live, "--http-tls-key", liveKey)
	cmd.Env = []string{"SWITCHBOARD_DATA_DIR=" + filepath.Join(dir, "data")}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
		close(lines)
	}()
	waitLog := func(msg string) map[string]any {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				require.True(t, ok, "daemon exited early")
				if m["message"] == msg {
					return m
				}
			case <-deadline:
				t.Fatalf("no log %q", msg)
			}
		}
	}
	url, _ := waitLog("switchboard is serving")["http_url"].(string)
	require.Regexp(t, `^https://`, url)
	cn, err := peerCN(t, url, certA)
	require.NoError(t, err)
	require.Equal(t, "first", cn)

	replace(t, certB, keyB, live, liveKey)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitLog("SIGHUP: tls certificate reloaded")
	cn, err = peerCN(t, url, certB)
	require.NoError(t, err)
	require.Equal(t, "second", cn)
}
