package speech

import (
	"slices"
	"strings"

	"switchboard/api/httpx"
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

// maxMP3BitRate is the highest bit rate an mp3 stream carries at a sample
// rate: MPEG-1 (32 to 48 kHz) 320 kbps, MPEG-2 (16 to 24 kHz) 160 kbps,
// MPEG-2.5 (8 to 12 kHz) 64 kbps (ISO/IEC 11172-3 and 13818-3 Layer III
// bit rate tables).
func maxMP3BitRate(rate int) int {
	switch {
	case rate >= 32000:
		return 320000
	case rate >= 16000:
		return 160000
	}
	return 64000
}

// checkMP3 fits an mp3 format's bit rate to its sample rate: a bit rate the
// request gave (given) that the rate cannot carry is a 400 naming param,
// never lowered behind the client's back; the default (128 kbps) becomes
// the highest the rate carries when it is more (64 kbps at 8 kHz).
func checkMP3(f *Format, given bool, param string) error {
	if f.Codec != CodecMP3 {
		return nil
	}
	top := maxMP3BitRate(f.SampleRate)
	switch {
	case f.BitRate <= top:
		return nil
	case given:
		return httpx.BadRequest(param, "bit_rate %d is more than mp3 carries at %d Hz (at most %d; MPEG-2 rates 16000-24000 Hz carry 160000, 8000 Hz 64000)", f.BitRate, f.SampleRate, top)
	}
	f.BitRate = top
	return nil
}
