package sip

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/require"
)

func renderTimer(t *testing.T, mode string, refreshes int) string {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "sipp", "timer.xml.tmpl"))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tmpl.Execute(&buf, map[string]any{"Mode": mode, "Refreshes": make([]struct{}, refreshes)}))
	path := filepath.Join(t.TempDir(), "timer_"+mode+".xml")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

// TestSippSessionTimers drives RFC 4028 with sipp as the caller:
//   - an interval below Min-SE is refused 422 with our Min-SE (90 s);
//   - a caller that supports timers refreshes (UPDATE, answered with
//     Session-Expires), then stops as if it had vanished: the server hangs
//     up with BYE and Reason "session timer expired" before the interval
//     is over;
//   - a caller without timer support behind a proxy that asked for them:
//     the server is the refresher and refreshes every half interval, by
//     UPDATE when the caller allows it, by re-INVITE otherwise.
func TestSippSessionTimers(t *testing.T) {
	t.Run("422", func(t *testing.T) {
		m := &countMetrics{}
		srv := startServer(t, Options{}, newAnsweringHandler(), WithMetrics(m))
		out, err := runSipp(t, srv.UDPAddr(), "u1", renderTimer(t, "422", 0), "15551230000")
		requireSipp(t, out, err)
		require.Equal(t, 1, m.get(ResultIntervalTooSmall))
	})
	t.Run("caller refreshes then vanishes", func(t *testing.T) {
		h := newAnsweringHandler()
		srv := startServer(t, Options{MinSE: time.Second}, h)
		start := time.Now()
		out, err := runSipp(t, srv.UDPAddr(), "u1", renderTimer(t, "uac", 0), "15551230000")
		requireSipp(t, out, err)
		r := h.next(t)
		require.ErrorIs(t, r.cause, ErrSessionExpired)
		require.Less(t, time.Since(start), 8*time.Second)
	})
	for _, mode := range []string{"uas_update", "uas_invite"} {
		t.Run(mode, func(t *testing.T) {
			h := newAnsweringHandler()
			srv := startServer(t, Options{MinSE: time.Second}, h)
			out, err := runSipp(t, srv.UDPAddr(), "u1", renderTimer(t, mode, 2), "15551230000")
			requireSipp(t, out, err)
			r := h.next(t)
			require.ErrorIs(t, r.cause, ErrRemoteBye, "the caller's BYE ended the call, not the timer")
		})
	}
}

// TestPlacedSessionTimers drives RFC 4028 on calls the server places,
// sipp the callee: the INVITE asks for a timer (Session-Expires 2 s,
// Min-SE 1 s, Supported: timer) and
//   - a callee that makes us the refresher gets an UPDATE every half
//     interval (twice, then it hangs up);
//   - a callee that is the refresher and never refreshes is hung up with
//     BYE and Reason "session timer expired" before the interval is over;
//   - a callee without timers (no Session-Expires in its 2xx, no UPDATE
//     allowed) is refreshed by re-INVITE at the interval we asked for;
//   - a 422 with Min-SE 3 gets the INVITE again asking for 3 s, which the
//     callee takes (one UPDATE refresh, then it hangs up).
func TestPlacedSessionTimers(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		refreshes int
		cause     error
	}{
		{"uac", 2, ErrRemoteBye},
		{"uas", 0, ErrSessionExpired},
		{"none", 2, ErrRemoteBye},
		{"422", 1, ErrRemoteBye},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := startServer(t, Options{MinSE: time.Second, SessionExpires: 2 * time.Second}, newAnsweringHandler())
			u := startUAS(t, uasCase{Name: "timer_" + tc.mode, Template: "timer_callee.xml.tmpl", Mode: tc.mode, Refreshes: make([]struct{}, tc.refreshes)})
			call := placeTo(t, srv, u, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			require.NoError(t, call.Answer(ctx, placeRTP))
			select {
			case <-call.Context().Done():
			case <-ctx.Done():
				t.Fatal("the call did not end")
			}
			require.ErrorIs(t, context.Cause(call.Context()), tc.cause)
			if tc.mode == "uas" {
				require.Less(t, time.Since(start), 2*time.Second, "hung up before the interval was over")
			}
			u.wait(t)
			require.Eventually(t, func() bool { return srv.ActiveCalls() == 0 }, 2*time.Second, 10*time.Millisecond)
		})
	}
}
