package conversation_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime/realtimetest"
)

// TestApologyWithinASecondOfDrop: the provider's socket closes mid-call
// and the provider cannot take the call back (it refuses the handshake,
// it takes the connection and hangs, or it is gone); the caller hears the
// apology's first audio within a second of the drop, measured on the RTP
// the caller receives. A provider that vanishes without closing the
// socket is found by the ping timing (3 s) and apologized for within
// 4.5 s.
func TestApologyWithinASecondOfDrop(t *testing.T) {
	apologize := map[string]any{"fallback": "apologize", "apology": "Sorry, goodbye."}
	measure := func(t *testing.T, e *upstreamEnv, drop func(conn *realtimetest.Conn)) time.Duration {
		t.Helper()
		c, conn := e.callNoGreeting(t, apologize)
		ctx := ctxFor(t, 10*time.Second)
		// The call is under way: the model speaks, then stops.
		at := time.Now()
		_, err := conn.StreamResponse(ctx, realtimetest.Response{Audio: 200 * time.Millisecond, Transcript: "Hello."})
		require.NoError(t, err)
		c.waitHeard(at, 3*time.Second)
		c.waitSilence(at, 5, 3*time.Second)
		cut := time.Now()
		drop(conn)
		f := c.waitHeard(cut, 10*time.Second)
		got := c.waitEnded(15 * time.Second)
		require.Contains(t, got, "assistant unavailable")
		return f.at.Sub(cut)
	}
	e := startUpstream(t, realtimetest.Options{}, map[string]string{"SWITCHBOARD_RTP_PORTS": "31120-31127"})
	t.Run("refused", func(t *testing.T) {
		d := measure(t, e, func(conn *realtimetest.Conn) {
			e.up.SetRefuse(http.StatusServiceUnavailable)
			conn.Drop()
		})
		e.up.SetRefuse(0)
		t.Logf("drop to apology, reconnect refused: %v", d)
		require.Less(t, d, time.Second)
	})
	t.Run("hangs", func(t *testing.T) {
		d := measure(t, e, func(conn *realtimetest.Conn) {
			e.up.SetAcceptDelay(30 * time.Second)
			conn.Drop()
		})
		e.up.SetAcceptDelay(0)
		t.Logf("drop to apology, reconnect hangs: %v", d)
		require.Less(t, d, time.Second)
	})
	t.Run("vanished", func(t *testing.T) {
		d := measure(t, e, func(conn *realtimetest.Conn) {
			e.up.SetAcceptDelay(30 * time.Second)
			conn.StopReading()
		})
		e.up.SetAcceptDelay(0)
		t.Logf("silence to apology, provider vanished: %v", d)
		require.Less(t, d, 4500*time.Millisecond)
	})
	t.Run("gone", func(t *testing.T) {
		g := startUpstream(t, realtimetest.Options{}, map[string]string{"SWITCHBOARD_RTP_PORTS": "31130-31133"})
		defer func() {
			if t.Failed() {
				t.Log(g.d.Logs.String())
			}
		}()
		d := measure(t, g, func(*realtimetest.Conn) { g.up.Close() })
		t.Logf("drop to apology, provider gone: %v", d)
		require.Less(t, d, time.Second)
	})
}
