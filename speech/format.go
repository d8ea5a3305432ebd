package speech

import (
	"slices"
	"strings"
)

// Codec is an output codec of the TTS endpoints.
type Codec string

// The codecs of the spec's output format object.
const (
	CodecMP3   Codec = "mp3"
	CodecWAV   Codec = "wav"
	CodecPCM   Codec = "pcm"
	CodecMulaw Codec = "mulaw"
	CodecAlaw  Codec = "alaw"
)

// ContentType is the MIME type of audio in codec c (spec table).
func (c Codec) ContentType() string {
	switch c {
	case CodecMP3:
		return "audio/mpeg"
	case CodecWAV:
		return "audio/wav"
	case CodecPCM:
		return "audio/pcm"
	case CodecMulaw:
		return "audio/basic"
	case CodecAlaw:
		return "audio/alaw"
	}
	return "application/octet-stream"
}

// Format is a codec with its sample rate and, for mp3, bit rate.
type Format struct {
	Codec      Codec
	SampleRate int
	BitRate    int
}

// DefaultFormat is the output when a request gives no output_format: mp3
// at 24 kHz and 128 kbps.
var DefaultFormat = Format{Codec: CodecMP3, SampleRate: 24000, BitRate: 128000}

// SampleRates are the rates the TTS output and STT raw input accept.
var SampleRates = []int{8000, 16000, 22050, 24000, 44100, 48000}

// BitRates are the mp3 bit rates the TTS output accepts.
var BitRates = []int{32000, 64000, 96000, 128000, 192000}

var codecs = []Codec{CodecMP3, CodecWAV, CodecPCM, CodecMulaw, CodecAlaw}

// parseCodec matches a codec name case-insensitively.
func parseCodec(s string) (Codec, bool) {
	for _, c := range codecs {
		if strings.EqualFold(string(c), s) {
			return c, true
		}
	}
	return "", false
}

func validRate(r int) bool { return slices.Contains(SampleRates, r) }
