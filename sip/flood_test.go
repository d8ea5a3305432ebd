package sip

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
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
