package sip

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeSelfSigned makes a certificate for 127.0.0.1 and returns the PEM
// file paths.
func writeSelfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "switchboard test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile
}

// TestTLSOptions: with a certificate and key the server listens for SIP
// over TLS and answers an OPTIONS probe on it.
func TestTLSOptions(t *testing.T) {
	cert, key := writeSelfSigned(t)
	srv := startServer(t, Options{TLSAddr: "127.0.0.1:0", TLSCert: cert, TLSKey: key}, newAnsweringHandler())
	addr := srv.TLSAddr()
	require.True(t, addr.IsValid(), "no TLS listener")

	conn, err := tls.Dial("tcp", addr.String(), &tls.Config{InsecureSkipVerify: true})
	require.NoError(t, err)
	defer conn.Close()
	local := conn.LocalAddr().String()
	msg := strings.Join([]string{
		fmt.Sprintf("OPTIONS sip:%s;transport=tls SIP/2.0", addr),
		fmt.Sprintf("Via: SIP/2.0/TLS %s;branch=z9hG4bK-tls-1", local),
		"Max-Forwards: 70",
		fmt.Sprintf("From: <sip:probe@%s>;tag=tls1", local),
		fmt.Sprintf("To: <sip:%s>", addr),
		"Call-ID: tls-options-1",
		"CSeq: 1 OPTIONS",
		"Content-Length: 0",
		"", "",
	}, "\r\n")
	_, err = conn.Write([]byte(msg))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(status, "SIP/2.0 200"), "status line %q", status)
}
