package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/sip"
)

// TestDrainOnStop: when the appliance is told to stop (SIGTERM), it stops
// taking calls (readyz 503, new INVITEs 503 with Retry-After) while calls
// in progress go on for the drain time, then get a BYE saying why.
func TestDrainOnStop(t *testing.T) {
	d := apptest.Start(t, apptest.Config(t, t.TempDir(), map[string]string{"SWITCHBOARD_DRAIN_TIMEOUT": "2s"}))
	p := newPhone(t)
	active := p.call(t, d, "+15550007777")
	require.Eventually(t, func() bool { return d.App.Calls().Active() == 1 }, 5*time.Second, 10*time.Millisecond)

	stopped := make(chan struct{})
	start := time.Now()
	go func() { d.Stop(t); close(stopped) }()

	require.Eventually(t, func() bool {
		st, _, _ := d.Do(t, "GET", "/readyz", "", nil)
		return st == http.StatusServiceUnavailable
	}, 5*time.Second, 10*time.Millisecond, "readyz must say 503 while draining")
	st, _, _ := d.Do(t, "GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, st, "still alive while draining")

	// A new call is refused with 503 and Retry-After.
	other := newPhone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := other.dialer.Dial(ctx, sip.DialRequest{Target: d.App.SIPAddr().String(), To: demoNumber})
	var se *sip.StatusError
	require.True(t, errors.As(err, &se), "want a SIP status, got %v", err)
	require.Equal(t, 503, se.Status)

	// The call in progress is still up within the drain time, then ends.
	require.NoError(t, active.Context().Err(), "the call in progress must go on while draining")
	select {
	case <-active.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the call in progress did not get a BYE after the drain time")
	}
	require.ErrorIs(t, context.Cause(active.Context()), sip.ErrRemoteBye)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond, "BYE before the drain time")
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("the appliance did not stop after the drain")
	}
}
