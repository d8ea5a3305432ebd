package sip

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSourceGuard: a source is blocked at its limit within the window,
// stays blocked for the block time, then starts afresh; failures spread
// over more than a window never block; the table is emptied by prune.
func TestSourceGuard(t *testing.T) {
	now := time.Unix(1000, 0)
	g := newSourceGuard(3, 10*time.Second, time.Minute, func() time.Time { return now })
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")

	require.Equal(t, counted, g.fail(a))
	require.Equal(t, counted, g.fail(a))
	require.False(t, g.blocked(a))
	require.Equal(t, blockedNow, g.fail(a))
	require.True(t, g.blocked(a))
	require.False(t, g.blocked(b), "only the failing source")
	require.Equal(t, alreadyBlocked, g.fail(a))

	now = now.Add(59 * time.Second)
	require.True(t, g.blocked(a))
	now = now.Add(2 * time.Second)
	require.False(t, g.blocked(a), "the block expires")
	require.Equal(t, counted, g.fail(a), "and counting starts afresh")

	for range 5 {
		require.Equal(t, counted, g.fail(b))
		now = now.Add(6 * time.Second) // two per window at most
		if g.fail(b) == blockedNow {
			t.Fatal("failures over more than a window blocked the source")
		}
		now = now.Add(6 * time.Second)
	}
	now = now.Add(time.Hour)
	g.prune()
	require.Zero(t, g.tracked())
}

// TestStreamConnectionCap: one source holds at most SourceMaxConnections
// TCP connections; the next is closed as it is accepted, and a place
// freed by a close is taken again.
func TestStreamConnectionCap(t *testing.T) {
	srv := startServer(t, Options{SourceMaxConnections: 3}, newAnsweringHandler())
	options := func(c net.Conn, i int) error {
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		msg := "OPTIONS sip:probe@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP " + c.LocalAddr().String() + ";branch=z9hG4bK-cap" + strconv.Itoa(i) +
			"\r\nMax-Forwards: 70\r\nFrom: <sip:c@127.0.0.1>;tag=1\r\nTo: <sip:probe@127.0.0.1>\r\nCall-ID: cap-" + strconv.Itoa(i) +
			"\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		if statusOf(string(buf[:n])) != 200 {
			return fmt.Errorf("answer %q", buf[:n])
		}
		return nil
	}
	var conns []net.Conn
	for i := range 3 {
		c, err := net.Dial("tcp", srv.TCPAddr().String())
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, options(c, i))
		conns = append(conns, c)
	}
	extra, err := net.Dial("tcp", srv.TCPAddr().String())
	require.NoError(t, err)
	defer extra.Close()
	require.Error(t, options(extra, 3), "a fourth connection is closed")

	require.NoError(t, conns[0].Close())
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", srv.TCPAddr().String())
		if err != nil {
			return false
		}
		defer c.Close()
		return options(c, 4) == nil
	}, 3*time.Second, 100*time.Millisecond, "the freed place is taken again")
}

// TestRejectRetransmitBudget: a rejected call's final response goes to a
// source that never ACKs three times (at once, T1, 3*T1), not eleven
// (until Timer H at 64*T1); an INVITE refused before any provisional
// response is answered once.
func TestRejectRetransmitBudget(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, c *Call) {
		_ = c.Ringing()
		_ = c.Reject(486, "Busy Here")
	})
	srv := startServer(t, Options{}, h)
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.UDPAddr()))
	require.NoError(t, err)
	defer conn.Close()
	port := conn.LocalAddr().(*net.UDPAddr).Port
	count := func(msg string, wait time.Duration) map[int]int {
		_, err := conn.Write([]byte(msg))
		require.NoError(t, err)
		got := map[int]int{}
		buf := make([]byte, 4096)
		deadline := time.Now().Add(wait)
		for {
			require.NoError(t, conn.SetReadDeadline(deadline))
			n, err := conn.Read(buf)
			if err != nil {
				return got
			}
			got[statusOf(string(buf[:n]))]++
		}
	}
	got := count(invite(port, openNumber, ""), 8*time.Second)
	require.Equal(t, 1, got[180])
	require.Equal(t, 3, got[486], "486 sent once and retransmitted twice, then the transaction ended: %v", got)
	got = count(strings.ReplaceAll(invite(port, "+19995550000", ""), "malformed-", "unknown-"), 3*time.Second)
	require.Equal(t, 1, got[404], "404 sent once: %v", got)
}

// TestSafeParse: a parser panic becomes an error (the message is refused
// as malformed; the process goes on).
func TestSafeParse(t *testing.T) {
	_, err := safeParse(nil, []byte("OPTIONS sip:a@b SIP/2.0\r\n\r\n"))
	require.ErrorIs(t, err, errParserPanic)
}
