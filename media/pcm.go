package media

import (
	"encoding/binary"
	"math"
)

// PCM16 little-endian mono is the audio of the realtime protocol
// ("audio/pcm"), of WAV files and of the TTS and STT endpoints; these two
// functions are its one conversion to and from samples, RMS its level.

// AppendPCM16LE appends pcm as little-endian bytes to dst. It does not
// allocate when dst has capacity.
func AppendPCM16LE(dst []byte, pcm []int16) []byte {
	base := len(dst)
	dst = grow(dst, 2*len(pcm))
	out := dst[base:]
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
	}
	return dst
}

// DecodePCM16LE appends the samples of little-endian PCM16 bytes to dst
// (a trailing odd byte is ignored).
func DecodePCM16LE(dst []int16, b []byte) []int16 {
	base := len(dst)
	dst = grow(dst, len(b)/2)
	out := dst[base:]
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return dst
}

// RMS is the root mean square of a PCM frame (0 for an empty one).
func RMS(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}
