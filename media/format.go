package media

import (
	"fmt"
	"strconv"
	"time"
)

// Encoding is how audio is coded between a session and what it is routed
// to (a conversation, another leg, a recording).
type Encoding string

// Encodings of a Format.
const (
	// EncodingPCM16 is 16-bit linear PCM, little-endian, mono.
	EncodingPCM16 Encoding = "pcm16"
	// EncodingPCMU and EncodingPCMA are G.711 code words at 8 kHz.
	EncodingPCMU Encoding = "pcmu"
	EncodingPCMA Encoding = "pcma"
)

// Format is audio's encoding and sample rate: what a consumer of a
// session's audio takes, or what a writer gives it.
type Format struct {
	Encoding Encoding
	Rate     int
}

// PCM16 is 16-bit little-endian mono PCM at rate.
func PCM16(rate int) Format { return Format{Encoding: EncodingPCM16, Rate: rate} }

// The G.711 formats.
var (
	FormatPCMU = Format{Encoding: EncodingPCMU, Rate: ClockRate}
	FormatPCMA = Format{Encoding: EncodingPCMA, Rate: ClockRate}
)

// IsZero reports whether f is the zero Format.
func (f Format) IsZero() bool { return f == Format{} }

// G711 returns the codec of a G.711 format.
func (f Format) G711() (Codec, bool) {
	switch f.Encoding {
	case EncodingPCMU:
		return PCMU, true
	case EncodingPCMA:
		return PCMA, true
	}
	return Codec{}, false
}

// Check reports whether f is a format the pipeline handles: PCM16 at a
// rate the resampler takes, or G.711 at 8 kHz.
func (f Format) Check() error {
	switch f.Encoding {
	case EncodingPCM16:
		switch f.Rate {
		case 8000, 16000, 24000, 48000: // the resampler's rates
		default:
			return fmt.Errorf("%w: PCM16 at %d Hz", errBadFormat, f.Rate)
		}
	case EncodingPCMU, EncodingPCMA:
		if f.Rate != ClockRate {
			return fmt.Errorf("%w: G.711 at %d Hz", errBadFormat, f.Rate)
		}
	default:
		return fmt.Errorf("%w: encoding %q", errBadFormat, f.Encoding)
	}
	return nil
}

// BytesPerSecond is the format's data rate.
func (f Format) BytesPerSecond() int {
	if f.Encoding == EncodingPCM16 {
		return 2 * f.Rate
	}
	return f.Rate
}

// Duration is how long n bytes of audio in f last.
func (f Format) Duration(n int) time.Duration {
	bps := f.BytesPerSecond()
	if bps == 0 {
		return 0
	}
	return time.Duration(int64(n) * int64(time.Second) / int64(bps))
}

// String names the format as a pipeline stage: "PCM16LE(24k)", "PCMU".
func (f Format) String() string {
	switch f.Encoding {
	case EncodingPCMU:
		return "PCMU"
	case EncodingPCMA:
		return "PCMA"
	case EncodingPCM16:
		return "PCM16LE(" + khz(f.Rate) + ")"
	}
	return "none"
}

// khz writes a rate the way pipeline stages print it: "8k", "24k".
func khz(rate int) string { return strconv.Itoa(rate/1000) + "k" }
