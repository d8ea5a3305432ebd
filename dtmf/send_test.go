package dtmf

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAppendEventPackets(t *testing.T) {
	pkts, err := AppendEventPackets(nil, '#', 100*time.Millisecond, SendOptions{})
	require.NoError(t, err)
	require.Len(t, pkts, 5+EndPackets)
	for i, p := range pkts[:5] {
		require.Equal(t, i == 0, p.Marker)
		require.Equal(t, Payload{Event: 11, Volume: 10, Duration: uint16(i * 160)}, p.Payload)
		require.Equal(t, time.Duration(i)*20*time.Millisecond, p.Offset)
	}
	for i, p := range pkts[5:] {
		require.False(t, p.Marker)
		require.Equal(t, Payload{Event: 11, End: true, Volume: 10, Duration: 800}, p.Payload)
		require.Equal(t, time.Duration(5+i)*20*time.Millisecond, p.Offset)
	}

	// 48 kHz clock, 50 ms interval, duration not a multiple of it.
	pkts, err = AppendEventPackets(nil, '7', 120*time.Millisecond, SendOptions{ClockRate: 48000, Interval: 50 * time.Millisecond, Volume: 20})
	require.NoError(t, err)
	require.Len(t, pkts, 3+EndPackets)
	require.Equal(t, uint16(4800), pkts[2].Payload.Duration)
	require.Equal(t, Payload{Event: 7, End: true, Volume: 20, Duration: 5760}, pkts[3].Payload)
	require.Equal(t, 150*time.Millisecond, pkts[3].Offset)

	// Every sent key is received once, also with the marker stripped.
	for _, d := range []byte(allKeys) {
		pkts, err := AppendEventPackets(nil, d, DefaultKeyDuration, SendOptions{})
		require.NoError(t, err)
		r := NewReceiver(ReceiverOptions{})
		var got []Event
		for _, p := range pkts {
			if ev, ok, err := r.Push(1234, p.Payload.Marshal(), time.Unix(0, int64(p.Offset))); err == nil && ok {
				got = append(got, ev)
			}
		}
		require.Equal(t, string(d), digitsOf(got))
	}

	_, err = AppendEventPackets(nil, 'x', time.Second, SendOptions{})
	require.ErrorIs(t, err, errBadDigit)
	_, err = AppendEventPackets(nil, '1', 10*time.Millisecond, SendOptions{})
	require.ErrorIs(t, err, errBadDuration)
	_, err = AppendEventPackets(nil, '1', 9*time.Second, SendOptions{})
	require.ErrorIs(t, err, errBadDuration)
}

func TestToneGenerator(t *testing.T) {
	g := NewToneGenerator(ToneOptions{})
	var pcm []int16
	frame := make([]int16, 160)
	for _, d := range []byte(allKeys) {
		require.NoError(t, g.Start(d))
		for range 4 { // 80 ms tone
			g.Generate(frame)
			pcm = append(pcm, frame...)
		}
		g.Stop()
		for range 3 { // 60 ms pause
			g.Generate(frame)
			require.Equal(t, make([]int16, 160), frame)
			pcm = append(pcm, frame...)
		}
	}
	got, _ := detect(t, pcm, 160, DetectorOptions{})
	require.Equal(t, allKeys, got)

	// Level: two tones at -10 dBFS each, so the peak stays below -4 dBFS.
	require.NoError(t, g.Start('D'))
	long := make([]int16, 8000)
	g.Generate(long)
	var peak, sum float64
	for _, v := range long {
		peak = math.Max(peak, math.Abs(float64(v)))
		sum += float64(v) * float64(v)
	}
	require.InDelta(t, 2*32767*math.Pow(10, -0.5), peak, 300)
	rms := math.Sqrt(sum / float64(len(long)))
	require.InDelta(t, -7, 20*math.Log10(rms/(32767/math.Sqrt2)), 0.2)
	require.ErrorIs(t, g.Start('?'), errBadDigit)
	require.Zero(t, testing.AllocsPerRun(100, func() { g.Generate(frame) }))
}

func TestEventNotification(t *testing.T) {
	ev := Event{Digit: '*', Source: SourceRTP, At: time.Unix(1_700_000_123, 500)}
	require.Equal(t, DTMFEventReceived{Type: "input_audio_buffer.dtmf_event_received", Event: "*", ReceivedAt: 1_700_000_123}, ev.Notification())
	for c := range uint8(16) {
		d, ok := DigitForCode(c)
		require.True(t, ok)
		code, ok := EventCode(d)
		require.True(t, ok)
		require.Equal(t, c, code)
	}
	_, ok := DigitForCode(16)
	require.False(t, ok)
	require.False(t, ValidDigit('E'))
	require.Equal(t, "inband", SourceInband.String())
}
