package conversation_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
	"switchboard/realtime"
	"switchboard/realtime/realtimetest"
)

// TestG711PassthroughEndToEnd: with a provider speaking audio/pcmu and a
// caller on PCMU, every µ-law code the caller sends reaches the provider's
// input_audio_buffer.append unchanged, and every code of the provider's
// audio deltas reaches the caller's RTP unchanged (a real SIP call over
// loopback, the scripted upstream as the provider).
func TestG711PassthroughEndToEnd(t *testing.T) {
	t.Parallel()
	// A 300 ms jitter buffer: this test is about the bytes, and a packet
	// of the pattern late by more than the default 40 ms (the machine
	// busy with the rest of the suite) is dropped as late, which breaks
	// the pattern (it failed so with two busy loops beside it, 1 run in 6).
	e := startUpstream(t, realtimetest.Options{}, map[string]string{"SWITCHBOARD_UPSTREAM_AUDIO_FORMAT": "pcmu", "SWITCHBOARD_JITTER_DELAY": "300ms"})
	c, conn := e.callNoGreeting(t, nil)
	sess := conn.Session()
	require.Equal(t, realtime.FormatPCMU, sess.InputFormat().FormatType())

	// 0x7f and 0xff both decode to 0 and the caller's encoder writes 0xff:
	// the other 255 codes are sent as they are.
	var codes []byte
	for b := 0; b < 256; b++ {
		if b != 0x7f {
			codes = append(codes, byte(b))
		}
	}
	// Twice over, then silence: the codes arrive in two 160-byte frames.
	pattern := append(append([]byte(nil), codes...), codes...)
	c.say(media.PCMU.DecodeFrame(nil, pattern))

	var got []byte
	require.Eventually(t, func() bool {
		got = got[:0]
		for _, ev := range conn.Received() {
			if a, ok := ev.(*realtime.InputAudioBufferAppend); ok {
				got = append(got, a.Audio...)
			}
		}
		return bytes.Contains(got, pattern)
	}, 5*time.Second, 20*time.Millisecond, "the provider gets the caller's µ-law bytes as they were sent")

	start := time.Now()
	require.NoError(t, conn.Send(&realtime.ResponseOutputAudioDelta{ResponseID: "resp_pt", ItemID: "item_pt", Delta: pattern}))
	want := media.PCMU.DecodeFrame(nil, pattern)
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return containsPCM(c.pcm, want)
	}, 5*time.Second, 20*time.Millisecond, "the caller gets the provider's µ-law bytes as they were sent")
	t.Logf("provider delta to the caller's RTP in %v", time.Since(start))
}

// containsPCM reports whether want appears in got.
func containsPCM(got, want []int16) bool {
	for i := 0; i+len(want) <= len(got); i++ {
		match := true
		for j := range want {
			if got[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
