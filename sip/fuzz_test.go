package sip

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// FuzzServerMessage sends whole SIP messages (seeded with the RFC 4475
// torture messages and well-formed INVITEs, OPTIONS and BYEs) to a
// running server over loopback UDP, or TCP when the first byte is odd,
// through the gate, sipgo's transaction layer and the handlers. After each
// message the server must still answer an OPTIONS: a panic anywhere in it
// kills the fuzzing process, a wedged server fails the probe.
func FuzzServerMessage(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "rfc4475", "*.dat"))
	require.NoError(f, err)
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(append([]byte{0}, b...))
		f.Add(append([]byte{1}, b...))
	}
	h := HandlerFunc(func(ctx context.Context, c *Call) {
		_ = c.Ringing()
		_ = c.Reject(486, "Busy Here")
	})
	srv := startServerLog(f, zerolog.Nop(), Options{SourceFailLimit: 1 << 30, AckTimeout: 200 * time.Millisecond}, h)
	udp, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(f, err)
	f.Cleanup(func() { _ = udp.Close() })
	// The seeds' Vias name the fuzzer's own port: an answer that cannot
	// go back on its connection is sent nowhere else.
	port := udp.LocalAddr().(*net.UDPAddr).Port
	for _, drop := range []string{"", "Call-ID", "CSeq", "From", "To", "Via", "Contact", "Content-Type"} {
		f.Add(append([]byte{0}, invite(port, openNumber, drop)...))
		f.Add(append([]byte{1}, invite(port, authNumber, drop)...))
	}
	probe := []byte("OPTIONS sip:probe@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP " + udp.LocalAddr().String() +
		";rport;branch=z9hG4bK-probe\r\nMax-Forwards: 70\r\nFrom: <sip:f@127.0.0.1>;tag=1\r\nTo: <sip:probe@127.0.0.1>\r\n" +
		"Call-ID: fuzz-probe\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n")
	buf := make([]byte, 65535)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		if data[0]&1 == 1 {
			// The connection stays open until the probe is answered, so
			// answers go back on it.
			c, err := net.Dial("tcp", srv.TCPAddr().String())
			require.NoError(t, err)
			defer c.Close()
			_, _ = c.Write(data[1:])
		} else if len(data) <= 65000 {
			_, err := udp.Write(data[1:])
			require.NoError(t, err)
		}
		// The probe's own answer proves the server still works; answers
		// to the fuzzed message are read and dropped on the way.
		_, err := udp.Write(probe)
		require.NoError(t, err)
		deadline := time.Now().Add(5 * time.Second)
		for {
			require.NoError(t, udp.SetReadDeadline(deadline))
			n, err := udp.Read(buf)
			require.NoError(t, err, "the server stopped answering")
			if s := string(buf[:n]); statusOf(s) == 200 && strings.Contains(s, "Call-ID: fuzz-probe\r\n") {
				return
			}
		}
	})
}
