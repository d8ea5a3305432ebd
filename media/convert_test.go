package media

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func sine(rate int, hz, seconds, amp float64) []int16 {
	out := make([]int16, int(float64(rate)*seconds))
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return out
}

// zeroCrossings counts sign changes, a frequency estimate.
func zeroCrossings(pcm []int16) int {
	n := 0
	for i := 1; i < len(pcm); i++ {
		if (pcm[i-1] < 0) != (pcm[i] < 0) {
			n++
		}
	}
	return n
}

func TestResampleKeepsToneAndLength(t *testing.T) {
	for _, tc := range []struct{ in, out int }{
		{22050, 8000}, {22050, 16000}, {22050, 24000}, {22050, 44100}, {22050, 48000}, {8000, 24000}, {24000, 8000},
	} {
		t.Run("", func(t *testing.T) {
			in := sine(tc.in, 1000, 1, 10000)
			out := Convert(in, tc.in, tc.out)
			require.InDelta(t, tc.out, len(out), 1, "one second stays one second")
			// 1 kHz: 2000 zero crossings a second.
			require.InDelta(t, 2000, zeroCrossings(out), 4)
			mid := out[len(out)/4 : 3*len(out)/4]
			require.InDelta(t, 10000/math.Sqrt2, rms(mid), 150, "amplitude kept")
		})
	}
}

func TestResampleFiltersAboveNyquist(t *testing.T) {
	// 6 kHz cannot be carried at 8 kHz: it must be filtered out, not
	// folded down to 2 kHz.
	out := Convert(sine(22050, 6000, 1, 10000), 22050, 8000)
	mid := out[len(out)/4 : 3*len(out)/4]
	require.Less(t, rms(mid), 10000/math.Sqrt2/100, "at least 40 dB down")
}

func TestResampleSameRateCopies(t *testing.T) {
	in := []int16{1, 2, 3}
	out := Convert(in, 8000, 8000)
	require.Equal(t, in, out)
	out[0] = 9
	require.Equal(t, int16(1), in[0])
}

func BenchmarkResample22050To8000(b *testing.B) {
	in := sine(22050, 440, 1, 10000)
	b.SetBytes(int64(len(in) * 2))
	for b.Loop() {
		Convert(in, 22050, 8000)
	}
}

func BenchmarkResample22050To24000(b *testing.B) {
	in := sine(22050, 440, 1, 10000)
	b.SetBytes(int64(len(in) * 2))
	for b.Loop() {
		Convert(in, 22050, 24000)
	}
}
