package media

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTranscode(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	tests := []struct {
		name     string
		from, to Codec
	}{
		{"mu to A", PCMU, PCMA},
		{"A to mu", PCMA, PCMU},
		{"mu to mu", PCMU, PCMU},
		{"A to A", PCMA, PCMA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.to.Transcode(nil, tt.from, all)
			require.Len(t, got, 256)
			if tt.from == tt.to {
				require.Equal(t, all, got, "same law: bytes unchanged")
				return
			}
			// Silence stays within the smallest step of zero (A-law has no
			// zero code) and every code word lands within one quantisation
			// step of the linear round trip.
			silence := tt.to.DecodeFrame(nil, tt.to.Transcode(nil, tt.from, []byte{tt.from.SilenceByte()}))
			require.LessOrEqual(t, abs(int(silence[0])), 8)
			lin := tt.from.DecodeFrame(nil, all)
			direct := tt.to.DecodeFrame(nil, got)
			for i := range all {
				err := abs(int(direct[i]) - int(lin[i]))
				require.LessOrEqual(t, err, max(abs(int(lin[i]))/8, 16), "code 0x%02x: %d -> %d", i, lin[i], direct[i])
			}
		})
	}
}

func TestTranscodeInPlaceWithoutAlloc(t *testing.T) {
	buf := PCMU.EncodeFrame(nil, tone(440, 8000, 160, 8000))
	want := PCMA.Transcode(nil, PCMU, buf)
	allocs := testing.AllocsPerRun(100, func() {
		buf = PCMA.Transcode(buf[:0], PCMU, buf)
		buf = PCMU.Transcode(buf[:0], PCMA, buf)
	})
	require.Zero(t, allocs)
	require.Equal(t, want, PCMA.Transcode(nil, PCMU, buf), "mu -> A -> mu -> A is stable")
}
