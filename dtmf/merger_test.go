package dtmf

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestMerger(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	ev := func(d byte, s Source, at int) Event { return Event{Digit: d, Source: s, At: ms(at)} }
	tests := []struct {
		name string
		in   []Event
		want []bool
	}{
		{"event then tone", []Event{ev('5', SourceRTP, 0), ev('5', SourceInband, 60)}, []bool{true, false}},
		{"tone then event", []Event{ev('5', SourceInband, 0), ev('5', SourceRTP, 40)}, []bool{true, false}},
		{"event, tone, INFO: one press", []Event{ev('5', SourceRTP, 0), ev('5', SourceInband, 30), ev('5', SourceINFO, 100)}, []bool{true, false, false}},
		{"same key twice, both ways", []Event{ev('5', SourceRTP, 0), ev('5', SourceInband, 30), ev('5', SourceRTP, 200), ev('5', SourceInband, 230)}, []bool{true, false, true, false}},
		{"same key twice, copies late", []Event{ev('5', SourceRTP, 0), ev('5', SourceRTP, 150), ev('5', SourceInband, 120), ev('5', SourceInband, 250)}, []bool{true, true, false, false}},
		{"same source never merged", []Event{ev('7', SourceRTP, 0), ev('7', SourceRTP, 10)}, []bool{true, true}},
		{"different keys", []Event{ev('1', SourceRTP, 0), ev('2', SourceInband, 10)}, []bool{true, true}},
		{"outside the window", []Event{ev('3', SourceRTP, 0), ev('3', SourceInband, 400)}, []bool{true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMerger(MergerOptions{})
			var got []bool
			for _, e := range tc.in {
				got = append(got, m.Add(e))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestPipelineEventsAndTones sends keys both as RFC 4733 events and as tones
// in the audio, and checks every key counts once.
func TestPipelineEventsAndTones(t *testing.T) {
	keys := "1223#"
	t0 := time.Unix(1_700_000_000, 0)
	rcv := NewReceiver(ReceiverOptions{})
	det := NewDetector(DetectorOptions{})
	gen := NewToneGenerator(ToneOptions{})
	c, err := NewCollector(CollectorOptions{})
	require.NoError(t, err)

	var accepted []byte
	var flushes []Flush
	handle := func(evs ...Event) {
		for _, e := range evs {
			r := c.Add(e)
			if r.Accepted {
				accepted = append(accepted, r.Key.Digit)
			}
			if r.HasFlush {
				flushes = append(flushes, r.Flush)
			}
		}
	}
	frame := make([]int16, 160)
	var dst []Event
	var tones, events int
	tick := 0 // 20 ms frames
	for i := range len(keys) {
		pkts, err := AppendEventPackets(nil, keys[i], 100*time.Millisecond, SendOptions{})
		require.NoError(t, err)
		require.NoError(t, gen.Start(keys[i]))
		ts := uint32(tick * 160)
		start := tick
		// 5 frames of tone + event packets, then 5 frames of silence.
		for f := 0; f < 10; f++ {
			now := t0.Add(time.Duration(tick) * 20 * time.Millisecond)
			if f == 5 {
				gen.Stop()
			}
			for _, p := range pkts {
				if p.Offset == time.Duration(tick-start)*20*time.Millisecond {
					if ev, ok := rcv.PushPayload(ts, p.Payload, now); ok {
						events++
						handle(ev)
					}
				}
			}
			gen.Generate(frame)
			// The audio path is 40 ms behind the events.
			dst = det.Process(dst[:0], frame, now.Add(40*time.Millisecond))
			tones += len(dst)
			handle(dst...)
			tick++
		}
	}
	require.Equal(t, len(keys), tones, "every key heard as a tone")
	require.Equal(t, len(keys), events, "every key received as an event")
	require.Equal(t, keys, string(accepted))
	require.Equal(t, []Flush{{Digits: "1223", Reason: FlushHash, At: flushes[0].At}}, flushes)
}

// TestSizes keeps the per-call DTMF state small: every call queues up to
// 16 Events for its conversation and keeps two Mergers (its leg's and its
// collector's), so a field put back in the order of its meaning costs
// every call (56-byte Events and 40-byte merger entries before).
func TestSizes(t *testing.T) {
	require.EqualValues(t, 40, unsafe.Sizeof(Event{}))
	require.EqualValues(t, 32, unsafe.Sizeof(mergerEntry{}))
}
