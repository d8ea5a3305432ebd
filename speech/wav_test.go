package speech

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWAVRoundTrip(t *testing.T) {
	pcm := []int16{0, 1, -1, 32767, -32768}
	data := pcmBytes(pcm)
	got, rate, err := parseWAV(append(wavHeader(16000, len(data)), data...))
	require.NoError(t, err)
	require.Equal(t, 16000, rate)
	require.Equal(t, pcm, got)
}

func TestParseWAVStreamingHeader(t *testing.T) {
	// espeak-ng writing to a pipe leaves 0x7ffff000-ish sizes.
	data := pcmBytes([]int16{5, 6, 7})
	h := wavHeader(22050, 0x7ffff000)
	got, _, err := parseWAV(append(h, data...))
	require.NoError(t, err)
	require.Equal(t, []int16{5, 6, 7}, got)
}

func TestParseWAVRejects(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("RIFF0000WAVX"), []byte("RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00")} {
		_, _, err := parseWAV(b)
		require.ErrorIs(t, err, errBadWAV)
	}
}

func FuzzParseWAV(f *testing.F) {
	f.Add(append(wavHeader(8000, 4), 1, 2, 3, 4))
	f.Add([]byte("RIFF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pcm, rate, err := parseWAV(b)
		if err == nil && (rate <= 0 || len(pcm)*2 > len(b)) {
			t.Fatalf("rate %d, %d samples from %d bytes", rate, len(pcm), len(b))
		}
	})
}

func TestDetectContainer(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    []byte
		want string
	}{
		{"wav", wavHeader(8000, 0), "wav"},
		{"flac", []byte("fLaC\x00\x00\x00\x22"), "flac"},
		{"ogg", []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00vorbis"), "ogg"},
		{"opus", []byte("OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x13OpusHead"), "opus"},
		{"mkv", []byte{0x1A, 0x45, 0xDF, 0xA3, 0x9F}, "mkv"},
		{"mp4", []byte("\x00\x00\x00\x20ftypisom\x00\x00\x02\x00"), "mp4"},
		{"m4a", []byte("\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00"), "m4a"},
		{"mp3 id3", []byte("ID3\x04\x00"), "mp3"},
		{"mp3 frame", []byte{0xFF, 0xFB, 0x90, 0x44}, "mp3"},
		{"aac adts", []byte{0xFF, 0xF1, 0x50, 0x80}, "aac"},
		{"raw pcm", pcmBytes([]int16{100, -100, 200, -200}), ""},
		{"raw mulaw silence", []byte{0xFF, 0xFF, 0xFF, 0xFF}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, detectContainer(tc.h))
		})
	}
}

func FuzzDetectContainer(f *testing.F) {
	f.Add([]byte("RIFF0000WAVE"))
	f.Fuzz(func(t *testing.T, b []byte) { _ = detectContainer(b) })
}
