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

// storeFormatOf is how a session keeps the audio of format in: G.711 as
// it came, anything else as µ-law at 8 kHz. A caller is on the telephone
// (its audio came as G.711 at 8 kHz before it was widened to 24 kHz PCM16
// for the model), so nothing a listener notices is lost, and a second of a
// turn costs 8 KB instead of 48 KB: 15 s of a turn fit in 120 KB.
// Another rate than a multiple of 8 kHz is kept as it came.
func storeFormatOf(in format) format {
	if in.bytesPerSample() == 1 || in.rate%media.ClockRate != 0 {
		return in
	}
	return format{typ: realtime.FormatPCMU, rate: media.ClockRate}
}

// converter turns a stream of audio from one format into another piece
// by piece: its resampler keeps its history between the pieces of one
// stream, and its buffers serve the next piece, so a stream converted in
// frames or chunks costs no allocation once they have grown.
type converter struct {
	from, to format
	rs       *media.Resampler // nil: same rate, or a rate it cannot do (convert falls back to media.Convert)
	pcm, out []int16
}

func newConverter(from, to format) *converter {
	c := &converter{from: from, to: to}
	if from.rate != to.rate {
		c.rs, _ = media.NewResampler(from.rate, to.rate)
	}
	return c
}

// convert appends b, whole samples of c.from, to dst in c.to.
func (c *converter) convert(dst, b []byte) []byte {
	if c.from == c.to {
		return append(dst, b...)
	}
	c.pcm = c.from.decode(c.pcm[:0], b)
	return c.appendPCM(dst, c.pcm)
}

// appendPCM appends s, linear samples at c.from's rate, to dst in c.to.
func (c *converter) appendPCM(dst []byte, s []int16) []byte {
	switch {
	case c.rs != nil:
		c.out = c.rs.Process(c.out[:0], s)
		s = c.out
	case c.from.rate != c.to.rate:
		s = media.Convert(s, c.from.rate, c.to.rate)
	}
	return c.to.encode(dst, s)
}

// reset starts a new stream.
func (c *converter) reset() {
	if c.rs != nil {
		c.rs.Reset()
	}
}
