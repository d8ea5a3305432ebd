package conversation_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
	"switchboard/sip"
)

// openSockets counts the process's open sockets.
func openSockets(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// requirePortsFree binds every port of [lo, hi] on 127.0.0.1: a port the
// appliance still held would fail.
func requirePortsFree(t *testing.T, lo, hi int) {
	t.Helper()
	for p := lo; p <= hi; p++ {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
		require.NoError(t, err, "RTP port %d still in use", p)
		require.NoError(t, c.Close())
	}
}

// TestAgentFallbacksNoLeak: an upstream that refuses (503), one too slow
// for the answer timeout, and one cut mid-call each end in the agent's
// fallback: "refuse" turns the INVITE down with 503; "apologize" answers,
// plays the apology, then REFERs to fallback_uri or hangs up. A call cut
// mid-call reconnects once and re-seeds the conversation; cut again with
// the provider refusing, it apologizes. Afterwards no goroutine, socket or
// RTP port is left behind.
func TestAgentFallbacksNoLeak(t *testing.T) {
	ign := goleak.IgnoreCurrent()
	sockets := openSockets(t)
	env := func(ports string) map[string]string {
		return map[string]string{"SWITCHBOARD_RTP_PORTS": ports, "SWITCHBOARD_ANSWER_TIMEOUT": "1s"}
	}
	e := startUpstream(t, realtimetest.Options{}, env("31100-31103"))
	slow := startUpstream(t, realtimetest.Options{AcceptDelay: 3 * time.Second}, env("31110-31113"))
	refuse := map[string]any{"fallback": "refuse"}
	apologizeRefer := map[string]any{"fallback": "apologize", "fallback_uri": "sip:operator@127.0.0.1", "apology": "Sorry, please hold."}
	apologizeBye := map[string]any{"fallback": "apologize", "apology": "Sorry, goodbye."}

	// heardThenEnded checks an answered fallback call: the apology is
	// heard, then the call ends with reason (and REFER to referTo).
	heardThenEnded := func(t *testing.T, c *caller, reason, referTo string) {
		t.Helper()
		ack, ok := c.event("ack_sent")
		require.True(t, ok)
		c.waitHeard(ack.Time, 5*time.Second)
		got := c.waitEnded(15 * time.Second)
		require.Contains(t, got, reason)
		if referTo != "" {
			require.Equal(t, []string{referTo}, c.referred())
			refer, _ := c.event("refer_received")
			require.Greater(t, c.heardMs(ack.Time, refer.Time), 200, "REFER before the apology played")
		} else {
			require.Empty(t, c.referred())
		}
	}
	requireStatus := func(t *testing.T, err error, status int) {
		t.Helper()
		var se *sip.StatusError
		require.True(t, errors.As(err, &se), "want SIP %d, got %v", status, err)
		require.Equal(t, status, se.Status)
	}

	t.Run("refused/refuse", func(t *testing.T) {
		e.up.SetRefuse(http.StatusServiceUnavailable)
		defer e.up.SetRefuse(0)
		_, err := dial(t, e.d, e.agentNumber(refuse), callOptions{})
		requireStatus(t, err, 503)
	})
	t.Run("refused/apologize+refer", func(t *testing.T) {
		e.up.SetRefuse(http.StatusServiceUnavailable)
		defer e.up.SetRefuse(0)
		c, err := dial(t, e.d, e.agentNumber(apologizeRefer), callOptions{ReferStatus: 200})
		require.NoError(t, err)
		heardThenEnded(t, c, "assistant unavailable; transferred", "sip:operator@127.0.0.1")
	})
	t.Run("slow/refuse", func(t *testing.T) {
		start := time.Now()
		_, err := dial(t, slow.d, slow.agentNumber(refuse), callOptions{})
		requireStatus(t, err, 503)
		took := time.Since(start)
		require.GreaterOrEqual(t, took, 900*time.Millisecond)
		require.Less(t, took, 2500*time.Millisecond, "refused only after the slow handshake")
	})
	t.Run("slow/apologize+bye", func(t *testing.T) {
		c, err := dial(t, slow.d, slow.agentNumber(apologizeBye), callOptions{})
		require.NoError(t, err)
		heardThenEnded(t, c, "assistant unavailable", "")
	})
	t.Run("cut mid-call", func(t *testing.T) {
		c, conn := e.callNoGreeting(t, apologizeRefer)
		ctx := ctxFor(t, 15*time.Second)
		require.NoError(t, conn.Send(&realtime.InputAudioTranscriptionCompleted{ItemID: "item_u1", Transcript: "I want a pizza"}))
		_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 200 * time.Millisecond, Transcript: "Which size?"})
		require.NoError(t, err)
		require.NoError(t, conn.Send(&realtime.InputAudioTranscriptionCompleted{ItemID: "item_u2", Transcript: "A large one"}))
		res, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 5 * time.Second, Paced: true, DropAfter: 500 * time.Millisecond})
		require.NoError(t, err)
		require.True(t, res.Dropped)

		// One reconnect, seeded with the conversation so far.
		conn2, err := e.up.Accept(ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(reseeded(conn2)) >= 3 }, 5*time.Second, 10*time.Millisecond)
		require.Equal(t, []string{"user: I want a pizza", "assistant: Which size?", "user: A large one"}, reseeded(conn2))
		at := time.Now()
		_, err = conn2.StreamResponse(ctx, realtimetest.Response{Audio: 300 * time.Millisecond})
		require.NoError(t, err)
		c.waitHeard(at, 2*time.Second)
		c.waitSilence(at, 5, 3*time.Second)
		require.NoError(t, c.call.Context().Err(), "the call survives one cut")

		// Cut again while the provider refuses: the fallback.
		e.up.SetRefuse(http.StatusServiceUnavailable)
		defer e.up.SetRefuse(0)
		cut := time.Now()
		conn2.Drop()
		c.waitHeard(cut, 8*time.Second)
		got := c.waitEnded(15 * time.Second)
		require.Contains(t, got, "assistant unavailable; transferred")
		require.Equal(t, []string{"sip:operator@127.0.0.1"}, c.referred())
	})

	waitIdle(t, e.d)
	waitIdle(t, slow.d)
	requirePortsFree(t, 31100, 31103)
	requirePortsFree(t, 31110, 31113)
	e.d.Stop(t)
	slow.d.Stop(t)
	e.up.Close()
	slow.up.Close()
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t, ign)
	require.Eventually(t, func() bool { return openSockets(t) <= sockets }, 5*time.Second, 20*time.Millisecond,
		fmt.Sprintf("sockets: %d before, %d after", sockets, openSockets(t)))
}
