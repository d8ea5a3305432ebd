package test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app/apptest"
	"switchboard/dtmf"
	"switchboard/realtime"
)

// TestDTMFRedact enters a card number under the redact policy: the model
// is told how many digits, and the number appears nowhere: not upstream,
// not in the logs, not in the call's notes, not in the data directory.
func TestDTMFRedact(t *testing.T) {
	t.Parallel()
	const card = "4111111111111111"
	for _, source := range []string{"rtp", "info"} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			e := newDTMFEnv(t)
			p := e.dial(t, e.number(t, map[string]any{"dtmf": map[string]any{"mode": "redact"}}), callerOptions{})
			c := e.accept(t)
			live := e.liveCall(t)
			ctx := ctxFor(t, 20*time.Second)

			if source == "rtp" {
				p.press(t, card+"#", 60*time.Millisecond, 60*time.Millisecond)
			} else {
				// Each once the call took the one before: back-to-back INFOs
				// can be taken out of order (sip answers 200 before queueing
				// the INFO, and sipgo runs each request in its own goroutine).
				for i, k := range card + "#" {
					require.NoError(t, p.oc.SendInfo(ctx, dtmf.ContentTypeDTMFRelay, []byte("Signal="+string(k)+"\r\nDuration=100\r\n")))
					require.Eventually(t, func() bool { return len(e.keyLogs()) == i+1 }, 5*time.Second, 5*time.Millisecond, "key %d taken", i)
				}
			}
			want := dtmf.Policy{Mode: dtmf.ModeRedact}.ModelText(dtmf.Flush{Digits: card, Reason: dtmf.FlushHash})
			require.Contains(t, want, "16 digits")
			require.Equal(t, want, userText(t, ctx, c))

			// Every key was taken (and logged masked).
			keys := e.keyLogs()
			require.Len(t, keys, len(card)+1)
			for _, k := range keys {
				require.Equal(t, "*/"+source, k)
			}

			require.NoError(t, p.oc.Hangup(ctx, "done"))
			require.Eventually(t, func() bool { return e.d.App.Calls().Active() == 0 }, 5*time.Second, 10*time.Millisecond)
			snap, err := json.Marshal(live.Snapshot())
			require.NoError(t, err)
			var upstream []string
			for _, ev := range c.Received() {
				if b, err := realtime.Encode(ev); err == nil {
					upstream = append(upstream, string(b))
				}
			}
			e.d.Stop(t)
			for _, needle := range []string{card, card[:8], card[8:]} {
				require.NotContains(t, e.d.Logs.String(), needle, "digits in the logs")
				require.NotContains(t, string(snap), needle, "digits in the call record")
				require.NotContains(t, strings.Join(upstream, "\n"), needle, "digits sent to the model")
				require.Empty(t, apptest.FilesContain(t, e.d.DataDir, needle), "digits at rest")
			}
			require.Contains(t, string(snap), `"kind":"dtmf"`, "the keys are noted (masked)")
		})
	}
}

// TestDTMFRouteHangup presses 9, routed to hang up: the digits before it
// are flushed, the 9 never reaches the model, and the caller (sipp)
// receives BYE.
func TestDTMFRouteHangup(t *testing.T) {
	t.Parallel()
	e := newDTMFEnv(t)
	num := e.number(t, map[string]any{"dtmf": map[string]any{"mode": "route", "routes": map[string]any{
		"9": map[string]any{"kind": "hangup"}}}})
	steps := pcapSteps(sippPcaps, "1", "9")
	steps[1].Pause = -1 // the BYE follows the first packet of the 9
	done := make(chan struct{})
	go func() {
		defer close(done)
		// sipp fails unless the appliance sends BYE within 5 s of the 9.
		e.sipp(t, sippScenario(t, "call", scenarioData{PT: 101, Steps: steps, WaitBye: 5000}), num)
	}()
	c := e.accept(t)
	<-done
	require.Equal(t, []string{"1/rtp", "9/rtp"}, e.keyLogs())
	// The 1 typed before the routed key is flushed at once (the model may
	// or may not get it before the call is torn down); the 9 never
	// reaches the model.
	for _, text := range userTexts(c) {
		require.Equal(t, modelText("1", dtmf.FlushIdle), text)
	}
	require.Contains(t, e.d.Logs.String(), "dtmf route: hang up")
}

// TestDTMFRouteTransfer presses 0, routed to the operator: the caller
// receives a REFER to the target, and BYE once it reports success.
func TestDTMFRouteTransfer(t *testing.T) {
	t.Parallel()
	const target = "sip:operator@127.0.0.1"
	e := newDTMFEnv(t)
	num := e.number(t, map[string]any{"dtmf": map[string]any{"mode": "route", "routes": map[string]any{
		"0": map[string]any{"kind": "transfer", "target": target}, "9": map[string]any{"kind": "hangup"}}}})
	var mu sync.Mutex
	var referTo []string
	p := e.dial(t, num, callerOptions{OnRefer: func(to string) int {
		mu.Lock()
		defer mu.Unlock()
		referTo = append(referTo, to)
		return 200
	}})
	c := e.accept(t)
	p.press(t, "0", 80*time.Millisecond, 40*time.Millisecond)
	select {
	case <-p.oc.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not ended after the transfer")
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, referTo, 1)
	require.Contains(t, referTo[0], target)
	require.Empty(t, userTexts(c), "the routed key never reaches the model")
	require.Equal(t, []string{"0/rtp"}, e.keyLogs())
}
