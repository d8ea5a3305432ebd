package test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/sipleg"
)

// selfSignedCert writes a certificate for 127.0.0.1 and its key as PEM.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile
}

// srtpContext builds a pion context from an SDES key (AES_CM_128 suites).
func srtpContext(t *testing.T, suite, key string) *srtp.Context {
	t.Helper()
	profiles := map[string]srtp.ProtectionProfile{
		"AES_CM_128_HMAC_SHA1_80": srtp.ProtectionProfileAes128CmHmacSha1_80,
		"AES_CM_128_HMAC_SHA1_32": srtp.ProtectionProfileAes128CmHmacSha1_32,
	}
	p, ok := profiles[suite]
	require.True(t, ok, "suite %s", suite)
	c, err := srtp.CreateContext([]byte(key[:16]), []byte(key[16:]), p)
	require.NoError(t, err)
	return c
}

// TestBaresipSRTP: baresip calls the echo line over SIP TLS with its srtp
// module in mandatory mode (RTP/SAVP, SDES); the appliance requires SRTP.
// The caller hears its speech echoed, and a capture of lo shows that the
// media on the wire, both ways, is SRTP: every audio packet authenticates
// under the call's SDES keys and its payload is not the G.711 it carries.
// The same caller over plain UDP signalling is refused 488 (keys in clear).
func TestBaresipSRTP(t *testing.T) {
	_, err := exec.LookPath("baresip")
	require.NoError(t, err, "baresip must be installed (apt install baresip)")
	_, err = os.Stat("/usr/lib/baresip/modules/srtp.so")
	require.NoError(t, err, "baresip's srtp module must be installed (apt install baresip)")
	dir := t.TempDir()
	cert, key := selfSignedCert(t, dir)
	own := takePorts(t, 20)
	lo, hi := uint16(own.lo), uint16(own.hi)
	d := callDaemon(t, map[string]string{
		"SWITCHBOARD_RTP_PORTS": fmt.Sprintf("%d-%d", lo, hi), "SWITCHBOARD_RTP_SRTP": "required",
		"SWITCHBOARD_SIP_TLS_ADDR": "127.0.0.1:0", "SWITCHBOARD_SIP_TLS_CERT": cert, "SWITCHBOARD_SIP_TLS_KEY": key,
	})
	tlsAddr := d.App.SIPTLSAddr()
	require.True(t, tlsAddr.IsValid(), "no SIP TLS listener")
	speech := paddedSpeechWAV(t, dir)

	// baresip over plain UDP, SRTP mandatory: the keys would cross in
	// clear, the INVITE is refused.
	buf, stop := startBaresipSRTP(t, dir, "udp", speech, fmt.Sprintf("sip:14155550150@%s", d.App.SIPAddr()))
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "488") }, 15*time.Second, 50*time.Millisecond,
		"a crypto offer over UDP is refused: %s", tail(buf.String(), 2000))
	stop()
	requireNoCalls(t, d)

	sniff := newSniffer(t, lo, hi)
	rec := filepath.Join(dir, "tls", "rec")
	buf, stop = startBaresipSRTP(t, dir, "tls", speech, fmt.Sprintf("sip:14155550150@%s;transport=tls", tlsAddr))
	defer stop()
	c := liveCall(t, d, func() string { return tail(buf.String(), 3000) })
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 0 }, 40*time.Second, 50*time.Millisecond,
		"baresip did not hang up at the end of its WAV: %s", tail(buf.String(), 3000))
	stop() // baresip's recording is whole once it exited
	sniff.waitQuiet(t)
	out := buf.String()
	leg := c.Leg().(*sipleg.Leg)
	require.Equal(t, "TLS", strings.ToUpper(leg.SIP().Transport()))
	sdes := leg.SIP().Media().SRTP
	require.True(t, sdes.Active(), "the call is on SRTP: %s", tail(out, 3000))
	snap := c.Snapshot()

	// The echo came back through SRTP.
	decs, err := filepath.Glob(filepath.Join(rec, "dump-*-dec.wav"))
	require.NoError(t, err)
	require.Len(t, decs, 1, "baresip's recording: %s", tail(out, 3000))
	heard, _, err := readWAV(decs[0])
	require.NoError(t, err)
	said, _, err := readWAV(speech)
	require.NoError(t, err)
	windows, matched, median := echoWindows(said, heard, 0, 2*8000, 0.7)
	rev := make([]int16, len(said))
	for i, v := range said {
		rev[len(said)-1-i] = v
	}
	ctlWindows, ctlMatched, _ := echoWindows(rev, heard, 0, 2*8000, 0.7)

	// The capture: RTP ports are even, RTCP odd.
	tx, rx := srtpContext(t, sdes.Suite, sdes.Local), srtpContext(t, sdes.Suite, sdes.Remote)
	var sent, got, sentOK, gotOK, sameAsPlain int
	for _, dg := range sniff.datagrams() {
		fromUs := dg.src >= lo && dg.src <= hi
		port := dg.dst
		if fromUs {
			port = dg.src
		}
		if port%2 != 0 || len(dg.payload) < 12 || dg.payload[0]>>6 != 2 {
			continue
		}
		ctx := rx
		if fromUs {
			sent++
			ctx = tx
		} else {
			got++
		}
		var h rtp.Header
		plain, err := ctx.DecryptRTP(nil, dg.payload, &h)
		if err != nil {
			continue
		}
		if fromUs {
			sentOK++
		} else {
			gotOK++
		}
		var p rtp.Packet
		require.NoError(t, p.Unmarshal(plain))
		wire := dg.payload[len(plain)-len(p.Payload) : len(plain)]
		if string(wire) == string(p.Payload) {
			sameAsPlain++
		}
	}
	t.Logf("srtp %s over %s: captured %d RTP packets out, %d in; %d and %d authenticated under the call's keys; %d with a payload equal to its plaintext "+
		"caller heard %.1f s, %d/%d speech windows echoed (median lag %v, reversed control %d/%d); stats %+v",
		sdes.Suite, leg.SIP().Transport(), sent, got, sentOK, gotOK, sameAsPlain, float64(len(heard))/8000, matched, windows,
		time.Duration(median)*time.Second/8000, ctlMatched, ctlWindows, snap.Media)
	requireEcho(t, 12, windows, matched, median, ctlWindows, ctlMatched)
	require.Greater(t, sent, 200, "RTP out captured")
	require.Greater(t, got, 200, "RTP in captured")
	require.Equal(t, sent, sentOK, "what we sent authenticates under our key")
	require.Equal(t, got, gotOK, "what baresip sent authenticates under its key")
	require.Zero(t, sameAsPlain, "no payload crosses the wire as plain G.711")
	// baresip 1.0 sends its first two RTCP packets unprotected (one too
	// short for SRTCP, one failing its tag): dropped like a stranger's.
	require.LessOrEqual(t, snap.Media.Strangers, uint64(4))
}

// startBaresipSRTP starts baresip with the srtp module (mandatory SDES)
// dialling target over transport; it records what it hears in
// dir/<transport>/rec. stop ends it (idempotent).
func startBaresipSRTP(t *testing.T, dir, transport, speech, target string) (*apptest.SyncBuffer, func()) {
	t.Helper()
	b := launchBaresip(t, filepath.Join(dir, transport), baresipConf{transport: transport, source: speech, srtp: true}, target, 45*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("baresip (%s): %s", transport, tail(b.out.String(), 3000))
		}
	})
	return b.out, b.stop
}

// freeBaresipPort finds a port free for UDP and TCP, and the one above it
// (baresip listens on UDP, TCP and TLS from sip_listen, and gives up when
// one of them is taken). It draws from 20000-29999, below the kernel's
// ephemeral range (32768 and up), where another test's outgoing
// connection took the port above a free UDP port now and then, and apart
// from the RTP ranges the tests give the appliance (31000 and up).
func freeBaresipPort(t *testing.T) int {
	t.Helper()
	for range 50 {
		port := 20000 + 2*mrand.IntN(5000)
		ok := true
		var held []io.Closer
		for _, p := range []int{port, port + 1} {
			u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			held = append(held, u)
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, c := range held {
			c.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free SIP port on loopback")
	return 0
}
