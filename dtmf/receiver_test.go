package dtmf

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var pcapDigits = []struct {
	file  string
	digit byte
}{
	{"0", '0'}, {"1", '1'}, {"2", '2'}, {"3", '3'}, {"4", '4'}, {"5", '5'},
	{"6", '6'}, {"7", '7'}, {"8", '8'}, {"9", '9'}, {"star", '*'}, {"pound", '#'},
}

func loadPcap(t *testing.T, name string) []pcapPacket {
	t.Helper()
	pkts := readPcapRTP(t, "/usr/share/sip-tester/dtmf_2833_"+name+".pcap")
	require.NotEmpty(t, pkts)
	return pkts
}

// feed pushes packets into r and returns the digits reported.
func feed(t *testing.T, r *Receiver, pkts []pcapPacket) []Event {
	t.Helper()
	var evs []Event
	for _, p := range pkts {
		ev, ok, err := r.Push(p.rtp.Timestamp, p.rtp.Payload, p.at)
		require.NoError(t, err)
		if ok {
			evs = append(evs, ev)
		}
	}
	return evs
}

func digitsOf(evs []Event) string {
	b := make([]byte, len(evs))
	for i, e := range evs {
		b[i] = e.Digit
	}
	return string(b)
}

func TestReceiverSippPcaps(t *testing.T) {
	mutations := []struct {
		name string
		fn   func([]pcapPacket) []pcapPacket
	}{
		{"as captured", func(p []pcapPacket) []pcapPacket { return p }},
		{"no marker bits", func(p []pcapPacket) []pcapPacket {
			for i := range p {
				p[i].rtp.Marker = false
			}
			return p
		}},
		{"marker on every packet", func(p []pcapPacket) []pcapPacket {
			for i := range p {
				p[i].rtp.Marker = true
			}
			return p
		}},
		{"end packets duplicated", func(p []pcapPacket) []pcapPacket {
			return append(p, p[len(p)-3:]...)
		}},
		{"end packets lost", func(p []pcapPacket) []pcapPacket { return p[:len(p)-3] }},
		{"first three packets lost", func(p []pcapPacket) []pcapPacket { return p[3:] }},
		{"only an end packet", func(p []pcapPacket) []pcapPacket { return p[len(p)-1:] }},
		{"reordered", func(p []pcapPacket) []pcapPacket {
			p[1], p[2] = p[2], p[1]
			p[0], p[4] = p[4], p[0]
			return p
		}},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			for _, pd := range pcapDigits {
				r := NewReceiver(ReceiverOptions{})
				pkts := m.fn(loadPcap(t, pd.file))
				evs := feed(t, r, pkts)
				require.Len(t, evs, 1, pd.file)
				require.Equal(t, pd.digit, evs[0].Digit, pd.file)
				require.Equal(t, SourceRTP, evs[0].Source)
				require.Equal(t, pkts[0].rtp.Timestamp, evs[0].RTPTimestamp)
				require.Equal(t, pkts[0].at, evs[0].At)
			}
		})
	}
}

// TestReceiverSequence plays every pcap as one stream, as a caller typing,
// re-stamping each press like one sender would, across a timestamp wrap.
func TestReceiverSequence(t *testing.T) {
	for _, base := range []uint32{1000, 0xffffffff - 3*8000} {
		t.Run(fmt.Sprintf("base %#x", base), func(t *testing.T) {
			r := NewReceiver(ReceiverOptions{})
			start := time.Unix(1_700_000_000, 0)
			var all []pcapPacket
			want := ""
			for i, pd := range append(pcapDigits, pcapDigits...) {
				pkts := loadPcap(t, pd.file)
				ts := base + uint32(i)*1600 // 200 ms apart
				t0 := pkts[0].at
				for j := range pkts {
					pkts[j].rtp.Timestamp = ts
					pkts[j].rtp.Marker = false
					pkts[j].at = start.Add(time.Duration(i)*200*time.Millisecond + pkts[j].at.Sub(t0))
				}
				all = append(all, pkts...)
				want += string(pd.digit)
			}
			require.Equal(t, want, digitsOf(feed(t, r, all)))
		})
	}
}

func TestReceiverSameKeyTwice(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	now := time.Unix(1_700_000_000, 0)
	var got []Event
	for press := range uint32(3) {
		ts := 5000 + press*1600
		for k := range 5 {
			p := Payload{Event: 5, Duration: uint16(k * 160), End: k >= 3}
			if ev, ok := r.PushPayload(ts, p, now); ok {
				got = append(got, ev)
			}
			now = now.Add(20 * time.Millisecond)
		}
	}
	require.Equal(t, "555", digitsOf(got))
}

func TestReceiverLatePacketOfOldEvent(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	now := time.Unix(1_700_000_000, 0)
	_, ok := r.PushPayload(8000, Payload{Event: 1}, now)
	require.True(t, ok)
	_, ok = r.PushPayload(16000, Payload{Event: 2}, now)
	require.True(t, ok)
	// A retransmitted end packet of the first event, late.
	_, ok = r.PushPayload(8000, Payload{Event: 1, End: true, Duration: 800}, now)
	require.False(t, ok)
	// A packet of an older event never seen: dropped, not reported out of order.
	_, ok = r.PushPayload(4000, Payload{Event: 3}, now)
	require.False(t, ok)
	// A sender restart far back in time is a new event.
	restart := uint32(16000)
	restart -= 20 * 8000
	ev, ok := r.PushPayload(restart, Payload{Event: 4}, now)
	require.True(t, ok)
	require.Equal(t, byte('4'), ev.Digit)
	// Non-key events (flash) are not reported.
	_, ok = r.PushPayload(20000, Payload{Event: 16}, now)
	require.False(t, ok)
}

func TestReceiverTimeoutAndDeadline(t *testing.T) {
	r := NewReceiver(ReceiverOptions{EndTimeout: 300 * time.Millisecond})
	now := time.Unix(1_700_000_000, 0)
	_, ok := r.PushPayload(100, Payload{Event: 7, Duration: 160}, now)
	require.True(t, ok)
	require.True(t, r.Active())
	dl, ok := r.Deadline()
	require.True(t, ok)
	require.Equal(t, now.Add(300*time.Millisecond), dl)
	require.False(t, r.Tick(now.Add(299*time.Millisecond)))
	require.True(t, r.Tick(now.Add(300*time.Millisecond)))
	require.False(t, r.Active())
	_, ok = r.Deadline()
	require.False(t, ok)
	// A late packet of the closed event is still the same event.
	_, ok = r.PushPayload(100, Payload{Event: 7, Duration: 480, End: true}, now.Add(time.Second))
	require.False(t, ok)
}

func TestReceiverLongEvent(t *testing.T) {
	r := NewReceiver(ReceiverOptions{})
	now := time.Unix(1_700_000_000, 0)
	_, ok := r.PushPayload(1000, Payload{Event: 0, Duration: 0}, now)
	require.True(t, ok)
	_, ok = r.PushPayload(1000, Payload{Event: 0, Duration: 0xffff}, now.Add(8*time.Second))
	require.False(t, ok)
	// Next segment (RFC 4733 2.5.1.3): same key, timestamp + duration.
	_, ok = r.PushPayload(1000+0xffff, Payload{Event: 0, Duration: 160}, now.Add(8200*time.Millisecond))
	require.False(t, ok)
	_, ok = r.PushPayload(1000+0xffff, Payload{Event: 0, Duration: 800, End: true}, now.Add(8300*time.Millisecond))
	require.False(t, ok)
	// Then a new press of the same key is reported.
	_, ok = r.PushPayload(1000+0xffff+8000, Payload{Event: 0}, now.Add(9300*time.Millisecond))
	require.True(t, ok)
}

func TestPayloadRoundTrip(t *testing.T) {
	tests := []struct {
		b []byte
		p Payload
	}{
		{[]byte{0x05, 0x0a, 0x01, 0x40}, Payload{Event: 5, Volume: 10, Duration: 320}},
		{[]byte{0x0b, 0x8a, 0x08, 0xc0}, Payload{Event: 11, End: true, Volume: 10, Duration: 2240}},
		{[]byte{0x0f, 0xbf, 0xff, 0xff}, Payload{Event: 15, End: true, Volume: 63, Duration: 0xffff}},
	}
	for _, tc := range tests {
		p, err := ParsePayload(tc.b)
		require.NoError(t, err)
		require.Equal(t, tc.p, p)
		require.Equal(t, tc.b, p.Marshal())
	}
	// The R bit is ignored.
	p, err := ParsePayload([]byte{1, 0x4a, 0, 0})
	require.NoError(t, err)
	require.Equal(t, Payload{Event: 1, Volume: 10}, p)
	_, err = ParsePayload([]byte{1, 2, 3})
	require.ErrorIs(t, err, errShortPayload)
}

func FuzzParsePayload(f *testing.F) {
	f.Add([]byte{0x05, 0x0a, 0x01, 0x40})
	f.Add([]byte{0x0b, 0x8a, 0x08, 0xc0})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePayload(b)
		if err != nil {
			return
		}
		q, err := ParsePayload(p.Marshal())
		require.NoError(t, err)
		require.Equal(t, p, q)
	})
}

// FuzzReceiver feeds arbitrary packet sequences: the receiver must never
// panic, never report a non-key, and report at most one key per distinct
// timestamp in a row.
func FuzzReceiver(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 5, 0x0a, 0, 0, 0, 0, 0, 1, 5, 0x8a, 1, 0x40})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReceiver(ReceiverOptions{})
		now := time.Unix(1_700_000_000, 0)
		var prev uint32
		havePrev := false
		for len(data) >= 8 {
			ts := uint32(data[0])<<24 | uint32(data[1])<<16 | uint32(data[2])<<8 | uint32(data[3])
			ev, ok, err := r.Push(ts, data[4:8], now)
			require.NoError(t, err)
			if ok {
				require.True(t, ValidDigit(ev.Digit))
				require.False(t, havePrev && prev == ts, "timestamp %d reported twice", ts)
			}
			prev, havePrev = ts, true
			now = now.Add(time.Duration(data[4]) * time.Millisecond)
			r.Tick(now)
			data = data[8:]
		}
	})
}
