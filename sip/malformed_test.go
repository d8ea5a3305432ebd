package sip

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// invite is an INVITE to number from 127.0.0.1 with one header line left
// out (drop names it; "" keeps every header).
func invite(port int, number, drop string) string {
	lines := []string{
		"INVITE sip:" + number + "@127.0.0.1 SIP/2.0",
		"Via: SIP/2.0/UDP 127.0.0.1:" + itoa(port) + ";rport;branch=z9hG4bK-malformed-" + strings.ReplaceAll(drop, "-", ""),
		"Max-Forwards: 70",
		"From: <sip:caller@127.0.0.1>;tag=abc",
		"To: <sip:" + number + "@127.0.0.1>",
		"Call-ID: malformed-" + drop + "@127.0.0.1",
		"CSeq: 1 INVITE",
		"Contact: <sip:caller@127.0.0.1:" + itoa(port) + ">",
		"Content-Type: application/sdp",
	}
	sdp := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
	var out []string
	for _, l := range lines {
		if drop != "" && strings.HasPrefix(l, drop+":") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\r\n") + "\r\nContent-Length: " + itoa(len(sdp)) + "\r\n\r\n" + sdp
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestMalformedInviteRefused: an INVITE missing a mandatory header
// (RFC 3261 §8.1.1: Call-ID, CSeq, From, To) never reaches a handler,
// never crashes the server (a missing Call-ID did: nil pointer in
// newInboundCall), and is answered 400; the server goes on taking calls.
func TestMalformedInviteRefused(t *testing.T) {
	h := newAnsweringHandler()
	m := &countMetrics{}
	srv := startServer(t, Options{}, h, WithMetrics(m))
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	port := conn.LocalAddr().(*net.UDPAddr).Port
	read := func() string {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			return ""
		}
		return string(buf[:n])
	}
	for _, drop := range []string{"Call-ID", "CSeq", "From", "To"} {
		_, err := conn.Write([]byte(invite(port, openNumber, drop)))
		require.NoError(t, err)
		var final string
		for r := read(); r != ""; r = read() {
			if !strings.HasPrefix(r, "SIP/2.0 100") {
				final = r
			}
		}
		require.True(t, strings.HasPrefix(final, "SIP/2.0 400"), "without %s: %q", drop, final)
	}
	require.Empty(t, h.results, "no malformed INVITE reached the handler")

	// The server is alive: a well-formed INVITE is still answered.
	_, err = conn.Write([]byte(invite(port, "+19995550000", "")))
	require.NoError(t, err)
	var got string
	for r := read(); r != ""; r = read() {
		got += r
	}
	require.Contains(t, got, "SIP/2.0 404", "the server still answers")
}

// TestHandlerPanicEndsOnlyItsCall: a Handler that panics is recovered; the
// INVITE is answered 500, the call slot is given back, and the server
// takes the next call.
func TestHandlerPanicEndsOnlyItsCall(t *testing.T) {
	var n atomic.Int32
	h := HandlerFunc(func(ctx context.Context, c *Call) {
		if n.Add(1) == 1 {
			panic("handler bug")
		}
		_ = c.Reject(486, "Busy Here")
	})
	srv := startServer(t, Options{}, h)
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	port := conn.LocalAddr().(*net.UDPAddr).Port
	final := func(msg string) int {
		_, err := conn.Write([]byte(msg))
		require.NoError(t, err)
		buf := make([]byte, 4096)
		for {
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(3*time.Second)))
			n, err := conn.Read(buf)
			require.NoError(t, err)
			if code := statusOf(string(buf[:n])); code >= 200 {
				return code
			}
		}
	}
	require.Equal(t, 500, final(invite(port, openNumber, "")))
	require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
	second := strings.ReplaceAll(invite(port, openNumber, ""), "malformed-", "second-")
	require.Equal(t, 486, final(second))
}
