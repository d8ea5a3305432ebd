package echo

import (
	"encoding/binary"

	"github.com/zaf/g711"

	"switchboard/media"
	"switchboard/realtime"
)

// format describes one of the session's audio formats.
type format struct {
	typ  string
	rate int
}

func formatOf(f *realtime.AudioFormat) format {
	return format{typ: f.FormatType(), rate: f.SampleRate()}
}

// bytesPerSample is 2 for PCM16 and 1 for G.711.
func (f format) bytesPerSample() int {
	if f.typ == realtime.FormatPCMU || f.typ == realtime.FormatPCMA {
		return 1
	}
	return 2
}

// ms converts a byte count of this format to milliseconds.
func (f format) ms(n int) int { return n / f.bytesPerSample() * 1000 / f.rate }

// bytes converts milliseconds to a byte count of this format.
func (f format) bytes(ms int) int { return ms * f.rate / 1000 * f.bytesPerSample() }

// decode appends the linear samples of b to dst.
func (f format) decode(dst []int16, b []byte) []int16 {
	switch f.typ {
	case realtime.FormatPCMU:
		for _, c := range b {
			dst = append(dst, g711.DecodeUlawFrame(c))
		}
	case realtime.FormatPCMA:
		for _, c := range b {
			dst = append(dst, g711.DecodeAlawFrame(c))
		}
	default:
		for i := 0; i+1 < len(b); i += 2 {
			dst = append(dst, int16(binary.LittleEndian.Uint16(b[i:])))
		}
	}
	return dst
}

// encode appends samples in this format to dst.
func (f format) encode(dst []byte, s []int16) []byte {
	switch f.typ {
	case realtime.FormatPCMU:
		for _, v := range s {
			dst = append(dst, g711.EncodeUlawFrame(v))
		}
	case realtime.FormatPCMA:
		for _, v := range s {
			dst = append(dst, g711.EncodeAlawFrame(v))
		}
	default:
		for _, v := range s {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		}
	}
	return dst
}

// convert turns audio from one format into another; equal formats pass
// through untouched.
func convert(b []byte, from, to format) []byte {
	if from == to {
		return b
	}
	s := from.decode(nil, b)
	if from.rate != to.rate {
		s = media.Convert(s, from.rate, to.rate)
	}
	return to.encode(nil, s)
}
