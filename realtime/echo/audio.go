package echo

import (
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
		return media.PCMU.DecodeFrame(dst, b)
	case realtime.FormatPCMA:
		return media.PCMA.DecodeFrame(dst, b)
	}
	return media.DecodePCM16LE(dst, b)
}

// encode appends samples in this format to dst.
func (f format) encode(dst []byte, s []int16) []byte {
	switch f.typ {
	case realtime.FormatPCMU:
		return media.PCMU.EncodeFrame(dst, s)
	case realtime.FormatPCMA:
		return media.PCMA.EncodeFrame(dst, s)
	}
	return media.AppendPCM16LE(dst, s)
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
