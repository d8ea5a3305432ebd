package media

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zaf/g711"
)

func TestCodecKnownValues(t *testing.T) {
	tests := []struct {
		codec   Codec
		pcm     int16
		encoded byte
	}{
		{PCMU, 0, 0xFF},
		{PCMU, -1, 0x7F},
		{PCMU, 32767, 0x80},
		{PCMU, -32768, 0x00},
		{PCMA, 0, 0xD5},
		{PCMA, 32767, 0xAA},
		{PCMA, -32768, 0x2A},
	}
	for _, tt := range tests {
		t.Run(tt.codec.Name, func(t *testing.T) {
			got := tt.codec.EncodeFrame(nil, []int16{tt.pcm})
			require.Equal(t, []byte{tt.encoded}, got)
		})
	}
	require.Equal(t, byte(0xFF), PCMU.SilenceByte())
	require.Equal(t, byte(0xD5), PCMA.SilenceByte())
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			// Every code word decodes and re-encodes to itself (mu-law has
			// two zero codes, 0x7F and 0xFF, which both decode to 0).
			for b := 0; b < 256; b++ {
				pcm := c.DecodeFrame(nil, []byte{byte(b)})
				enc := c.EncodeFrame(nil, pcm)
				if c.Name == "PCMU" && b == 0x7F {
					require.Equal(t, byte(0xFF), enc[0])
					continue
				}
				require.Equal(t, byte(b), enc[0], "code 0x%02x", b)
			}
			// Linear samples survive with the logarithmic quantisation error.
			for s := -32768; s < 32768; s += 97 {
				enc := c.EncodeFrame(nil, []int16{int16(s)})
				dec := c.DecodeFrame(nil, enc)
				err := abs(int(dec[0]) - s)
				require.LessOrEqual(t, err, max(abs(s)/16, 16), "sample %d -> %d", s, dec[0])
			}
		})
	}
}

func TestCodecAppendsWithoutAlloc(t *testing.T) {
	pcm := make([]int16, 160)
	enc := make([]byte, 0, 160)
	dec := make([]int16, 0, 160)
	allocs := testing.AllocsPerRun(100, func() {
		enc = PCMU.EncodeFrame(enc[:0], pcm)
		dec = PCMA.DecodeFrame(dec[:0], enc)
	})
	require.Zero(t, allocs)
	require.Len(t, dec, 160)
}

func TestCodecLookup(t *testing.T) {
	c, ok := CodecByPayloadType(8)
	require.True(t, ok)
	require.Equal(t, "PCMA", c.String())
	_, ok = CodecByPayloadType(18)
	require.False(t, ok)
	c, err := CodecByName("PCMU")
	require.NoError(t, err)
	require.Equal(t, uint8(0), c.PayloadType)
	_, err = CodecByName("G729")
	require.ErrorIs(t, err, errUnknownCodec)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestEncodeTablesMatchG711 checks the lookup-table encoders against
// zaf/g711 for every 16-bit input, so the tables can never drift from the
// library that defines the code words.
func TestEncodeTablesMatchG711(t *testing.T) {
	pcm := make([]int16, 0, 1<<16)
	for s := math.MinInt16; s <= math.MaxInt16; s++ {
		pcm = append(pcm, int16(s))
	}
	ulaw := PCMU.EncodeFrame(nil, pcm)
	alaw := PCMA.EncodeFrame(nil, pcm)
	require.Len(t, ulaw, 1<<16)
	require.Len(t, alaw, 1<<16)
	for i, s := range pcm {
		if want := g711.EncodeUlawFrame(s); ulaw[i] != want {
			t.Fatalf("PCMU %d: table 0x%02x, g711 0x%02x", s, ulaw[i], want)
		}
		if want := g711.EncodeAlawFrame(s); alaw[i] != want {
			t.Fatalf("PCMA %d: table 0x%02x, g711 0x%02x", s, alaw[i], want)
		}
	}
	// Decoding is g711's own 256-entry table: every code word round-trips
	// through it exactly as through the library.
	for b := 0; b < 256; b++ {
		require.Equal(t, g711.DecodeUlawFrame(byte(b)), PCMU.DecodeFrame(nil, []byte{byte(b)})[0])
		require.Equal(t, g711.DecodeAlawFrame(byte(b)), PCMA.DecodeFrame(nil, []byte{byte(b)})[0])
	}
}
