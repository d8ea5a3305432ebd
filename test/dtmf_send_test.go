package test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
)

// TestDTMFSendTool has the model call send_dtmf {"digits":"12#"}: a caller
// that negotiated telephone-event receives RFC 4733 events (one timestamp
// per key, growing durations, three end packets), a caller that did not
// receives tones its own detector decodes.
func TestDTMFSendTool(t *testing.T) {
	t.Parallel()
	t.Run("rfc4733", func(t *testing.T) {
		t.Parallel()
		e := newDTMFEnv(t)
		p := e.dial(t, e.number(t, nil), callerOptions{})
		sendDigits(t, e, "12#")
		require.Eventually(t, func() bool { ev, _ := p.received(); return ev == "12#" }, 3*time.Second, 10*time.Millisecond)

		p.mu.Lock()
		pkts := append([]eventPacket(nil), p.packets...)
		p.mu.Unlock()
		var keys [][]eventPacket
		for i, pk := range pkts {
			if i == 0 || pk.h.Timestamp != pkts[i-1].h.Timestamp {
				keys = append(keys, nil)
			}
			keys[len(keys)-1] = append(keys[len(keys)-1], pk)
		}
		require.Len(t, keys, 3, "one timestamp per key")
		want := dtmf.DefaultKeyDuration * 8000 / time.Second
		for i, k := range keys {
			require.Equal(t, "12#"[i], eventDigit(k[0].payload.Event), "key %d", i)
			require.True(t, k[0].h.Marker, "marker on the first packet of key %d", i)
			ends := 0
			for j, pk := range k {
				require.Equal(t, k[0].payload.Event, pk.payload.Event)
				if j > 0 {
					require.False(t, pk.h.Marker)
					require.GreaterOrEqual(t, pk.payload.Duration, k[j-1].payload.Duration)
					require.Equal(t, k[j-1].h.SequenceNumber+1, pk.h.SequenceNumber, "consecutive sequence numbers")
				}
				if pk.payload.End {
					ends++
					require.Equal(t, uint16(want), pk.payload.Duration, "final duration of key %d", i)
				}
			}
			require.Equal(t, dtmf.EndPackets, ends, "end packets of key %d", i)
			require.True(t, k[len(k)-1].payload.End)
			if i > 0 {
				require.Greater(t, k[0].h.Timestamp-keys[i-1][0].h.Timestamp, uint32(want), "keys do not overlap")
			}
		}
		_, tones := p.received()
		require.Empty(t, tones, "no tones when events were negotiated")
	})
	t.Run("inband", func(t *testing.T) {
		t.Parallel()
		e := newDTMFEnv(t)
		p := e.dial(t, e.number(t, nil), callerOptions{NoEvents: true})
		sendDigits(t, e, "12#")
		require.Eventually(t, func() bool { _, tones := p.received(); return tones == "12#" }, 3*time.Second, 10*time.Millisecond)
		ev, _ := p.received()
		require.Empty(t, ev)
		p.mu.Lock()
		require.Empty(t, p.packets, "no telephone-event without negotiation")
		p.mu.Unlock()
	})
}

// sendDigits has the model call send_dtmf and requires it to succeed.
func sendDigits(t *testing.T, e *dtmfEnv, digits string) {
	t.Helper()
	c := e.accept(t)
	ctx := ctxFor(t, 10*time.Second)
	callID, err := c.FunctionCall("send_dtmf", `{"digits":"`+digits+`"}`)
	require.NoError(t, err)
	out, err := c.AwaitFunctionOutput(ctx, callID)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, out)
}

func eventDigit(code uint8) byte {
	switch {
	case code <= 9:
		return '0' + code
	case code == 10:
		return '*'
	case code == 11:
		return '#'
	case code <= 15:
		return 'A' + code - 12
	}
	return '?'
}
