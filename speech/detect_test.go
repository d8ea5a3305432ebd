package speech

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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
