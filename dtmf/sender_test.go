package dtmf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSender drives the sender the way the pacer does, one call per 20 ms
// frame, and checks what goes on the wire: one timestamp per key, the
// marker on its first packet, durations growing by one frame, the end
// packet three times, DefaultKeyGap of audio between keys.
func TestSender(t *testing.T) {
	var sent []byte
	s := NewSender(101, SendOptions{Interval: 20 * time.Millisecond})
	done, err := s.Send("1#", func(d byte, _ time.Time) { sent = append(sent, d) })
	require.NoError(t, err)
	type pkt struct {
		ts      uint32
		marker  bool
		payload Payload
	}
	var pkts []pkt
	var audio []uint32
	for tick := range 40 {
		ts := 1000 + uint32(tick)*160
		pt, marker, evTS, payload, ok := s.NextEvent(ts)
		if !ok {
			audio = append(audio, ts)
			continue
		}
		require.Equal(t, uint8(101), pt)
		pl, err := ParsePayload(payload)
		require.NoError(t, err)
		pkts = append(pkts, pkt{evTS, marker, pl})
	}
	// 100 ms key at 20 ms: 5 updates + 3 end packets, per digit.
	require.Len(t, pkts, 16)
	for d, code := range []uint8{1, 11} {
		key := pkts[d*8 : d*8+8]
		for i, k := range key {
			require.Equal(t, key[0].ts, k.ts, "one timestamp per key press (RFC 4733 2.5.1.1)")
			require.Equal(t, code, k.payload.Event)
			require.Equal(t, i == 0, k.marker)
			require.Equal(t, i >= 5, k.payload.End)
			if i < 5 {
				require.Equal(t, uint16(i*160), k.payload.Duration)
			} else {
				require.Equal(t, uint16(800), k.payload.Duration)
			}
		}
	}
	require.Equal(t, uint32(1000), pkts[0].ts)
	// The second key starts after a 100 ms gap (5 frames of audio).
	require.Equal(t, uint32(1000+13*160), pkts[8].ts)
	require.Equal(t, []uint32{1000 + 8*160, 1000 + 9*160, 1000 + 10*160, 1000 + 11*160, 1000 + 12*160}, audio[:5])
	require.Equal(t, "1#", string(sent))
	select {
	case <-done:
	default:
		t.Fatal("done not closed after the gap that follows the last digit")
	}
}

// TestSenderQueueAndClose: requests go out in order; Close releases the
// waiters of what was not sent; bad digits are refused up front.
func TestSenderQueueAndClose(t *testing.T) {
	s := NewSender(101, SendOptions{})
	for _, bad := range []string{"", "12x", string(make([]byte, MaxSendDigits+1))} {
		_, err := s.Send(bad, nil)
		require.ErrorIs(t, err, ErrDigits)
	}
	var order []byte
	first, err := s.Send("1", func(d byte, _ time.Time) { order = append(order, d) })
	require.NoError(t, err)
	second, err := s.Send("2", func(d byte, _ time.Time) { order = append(order, d) })
	require.NoError(t, err)
	for tick := uint32(0); tick < 14; tick++ {
		s.NextEvent(tick * 160)
	}
	<-first
	require.Equal(t, "1", string(order))
	s.Close()
	<-second
	s.Close()
	after, err := s.Send("3", nil)
	require.NoError(t, err)
	<-after
	_, _, _, _, ok := s.NextEvent(0)
	require.False(t, ok)
}

// TestTones: the in-band rendering is detected back as the same keys.
func TestTones(t *testing.T) {
	pcm, err := Tones("159#", 8000)
	require.NoError(t, err)
	require.Len(t, pcm, 4*(800+800))
	d := NewDetector(DetectorOptions{})
	var got []byte
	for off := 0; off+160 <= len(pcm)+1600; off += 160 {
		frame := make([]int16, 160)
		if off < len(pcm) {
			copy(frame, pcm[off:])
		}
		for _, ev := range d.Process(nil, frame, time.Now()) {
			got = append(got, ev.Digit)
		}
	}
	require.Equal(t, "159#", string(got))
	_, err = Tones("", 8000)
	require.ErrorIs(t, err, ErrDigits)
}

// TestSources: RFC 4733 packets, INFO bodies and in-band tones all come
// out as key presses; garbage is refused with an error.
func TestSources(t *testing.T) {
	var got []Event
	s := NewSources(true, func(ev Event) { got = append(got, ev) })
	require.True(t, s.Inband())
	now := time.Now()
	payload := Payload{Event: 5, End: true, Volume: 10, Duration: 800}.AppendTo(nil)
	require.NoError(t, s.RTP(1234, payload, now))
	require.NoError(t, s.INFO(ContentTypeDTMFRelay, []byte("Signal=7\r\nDuration=100\r\n"), now))
	require.Error(t, s.INFO("text/plain", []byte("hello"), now))
	require.Error(t, s.RTP(1, []byte{1}, now))
	pcm, err := Tones("3", 8000)
	require.NoError(t, err)
	for off := 0; off < len(pcm)+1600; off += 160 {
		frame := make([]int16, 160)
		if off < len(pcm) {
			copy(frame, pcm[off:])
		}
		s.Audio(frame, now)
	}
	var digits []byte
	for _, ev := range got {
		digits = append(digits, ev.Digit)
	}
	require.Equal(t, "573", string(digits))
	require.False(t, NewSources(false, nil).Inband())

	// One press that comes as events and as tones (a gateway sending
	// both) is one key.
	got = nil
	s = NewSources(true, func(ev Event) { got = append(got, ev) })
	payload = Payload{Event: 3, End: true, Volume: 10, Duration: 800}.AppendTo(nil)
	require.NoError(t, s.RTP(99, payload, now))
	for off := 0; off < len(pcm)+1600; off += 160 {
		frame := make([]int16, 160)
		if off < len(pcm) {
			copy(frame, pcm[off:])
		}
		s.Audio(frame, now.Add(time.Duration(off/8)*time.Millisecond))
	}
	require.Len(t, got, 1, "the tone of a key already reported as an event")
}

// FuzzSources feeds arbitrary RTP payloads and INFO bodies: nothing
// panics, and every reported key is a valid digit.
func FuzzSources(f *testing.F) {
	f.Add(uint32(1), []byte{1, 0x8a, 3, 0x20}, "application/dtmf-relay", []byte("Signal=1\r\nDuration=100\r\n"))
	f.Add(uint32(0), []byte{}, "application/dtmf", []byte("#"))
	f.Fuzz(func(t *testing.T, ts uint32, payload []byte, ct string, body []byte) {
		s := NewSources(false, func(ev Event) {
			if !ValidDigit(ev.Digit) {
				t.Fatalf("invalid digit %q", ev.Digit)
			}
		})
		now := time.Now()
		_ = s.RTP(ts, payload, now)
		_ = s.INFO(ct, body, now)
		s.Audio(make([]int16, 160), now.Add(time.Second))
	})
}
