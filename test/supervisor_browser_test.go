package test

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime/realtimetest"
)

// sine24k is seconds of freq at 24 kHz, at 40% of full scale.
func sine24k(freq float64, seconds float64) []int16 {
	out := make([]int16, int(seconds*24000))
	for i := range out {
		out[i] = int16(13000 * math.Sin(2*math.Pi*freq*float64(i)/24000))
	}
	return out
}

// lastSeconds is the last seconds of 24 kHz pcm, at 8 kHz.
func lastSeconds(pcm []int16, seconds float64) []int16 {
	n := int(seconds * 24000)
	if len(pcm) > n {
		pcm = pcm[len(pcm)-n:]
	}
	return to8k(pcm)
}

// TestSupervisorBrowserCaller: the caller is a browser (pion, Opus at
// 48 kHz, 1000 Hz) talking to the agent (the scripted model, 440 Hz): a
// wideband call, whose line the listener's mix gets through the session's
// rate conversion. A listener (pion) hears both tones and nobody hears it;
// a supervisor (pion, 1700 Hz) takes over: the caller hears the supervisor
// and no longer the agent, the supervisor hears the caller; the
// supervisor's leaving ends the call.
func TestSupervisorBrowserCaller(t *testing.T) {
	e := newSupervisorEnv(t)
	d := e.d
	caller := newBrowserPeer(t, true)
	st, h, body := caller.call(d, "?agent_id="+e.agentID, d.OwnerKey)
	require.Equal(t, http.StatusCreated, st, body)
	loc := h.Get("Location")
	id := loc[strings.LastIndex(loc, "/")+1:]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	uc, err := e.up.Accept(ctx)
	require.NoError(t, err, "the agent's model session")
	select {
	case <-caller.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the caller's browser did not connect")
	}
	go func() { _, _ = uc.StreamResponse(ctx, realtimetest.Response{Audio: 40 * time.Second, Paced: true}) }()
	go caller.speak(sine24k(callerHz, 30))

	listener := newBrowserPeer(t, true)
	st, _, body = listener.supervise(d.URL, id, "listen", d.OwnerKey)
	require.Equal(t, http.StatusCreated, st, body)
	select {
	case <-listener.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener's browser did not connect")
	}
	go listener.speak(sine24k(supervisorHz, 10)) // nobody may hear it
	require.Eventually(t, func() bool { return len(listener.heardPCM()) >= 24000*3 }, 15*time.Second, 20*time.Millisecond)
	heard := toneWindows(lastSeconds(listener.heardPCM(), 2))
	t.Logf("the listener heard %s", heardTones(heard))
	requireMixed(t, heard, "the listener")
	require.LessOrEqual(t, toneShare(heard, supervisorHz, heardLevel), 0.02, "nobody hears the listener, not even itself: %s", heardTones(heard))
	callerHeard := toneWindows(lastSeconds(caller.heardPCM(), 2))
	require.GreaterOrEqual(t, toneShare(callerHeard, agentHz, heardLevel), 0.9, "the caller hears the agent: %s", heardTones(callerHeard))
	require.LessOrEqual(t, toneShare(callerHeard, supervisorHz, heardLevel), 0.02, "the caller does not hear the listener: %s", heardTones(callerHeard))

	sup := newBrowserPeer(t, true)
	st, _, body = sup.supervise(d.URL, id, "takeover", d.OwnerKey)
	require.Equal(t, http.StatusCreated, st, body)
	select {
	case <-sup.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor's browser did not connect")
	}
	go sup.speak(sine24k(supervisorHz, 10))
	select {
	case <-uc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the model session is still open after the takeover")
	}
	mark := len(sup.heardPCM())
	require.Eventually(t, func() bool { return len(sup.heardPCM()) >= mark+24000*2 }, 10*time.Second, 20*time.Millisecond)
	supHeard := toneWindows(lastSeconds(sup.heardPCM(), 1.5))
	callerHeard = toneWindows(lastSeconds(caller.heardPCM(), 1.5))
	t.Logf("after the takeover, the supervisor heard %s; the caller heard %s", heardTones(supHeard), heardTones(callerHeard))
	require.GreaterOrEqual(t, toneShare(supHeard, callerHz, heardLevel), 0.9, "the supervisor hears the caller: %s", heardTones(supHeard))
	require.LessOrEqual(t, toneShare(supHeard, agentHz, heardLevel), 0.02, "the agent is gone: %s", heardTones(supHeard))
	require.GreaterOrEqual(t, toneShare(callerHeard, supervisorHz, heardLevel), 0.9, "the caller hears the supervisor: %s", heardTones(callerHeard))
	require.LessOrEqual(t, toneShare(callerHeard, agentHz, heardLevel), 0.02, "the caller no longer hears the agent: %s", heardTones(callerHeard))

	require.NoError(t, sup.pc.Close())
	requireNoCalls(t, d)
	rec := d.JSON(t, "GET", "/v1/calls/"+id, d.OwnerKey, nil, 200)
	require.Equal(t, "the supervisor hung up", rec["end_reason"])
}
