package stream

import (
	"fmt"

	"switchboard/media"
)

// converter turns the caller's audio, in the call's format, into the
// protocol's (toWire, on the media goroutine) and the bot's audio into the
// call's (toCall, on the reader goroutine), converting once each way: the
// same format passes through untouched (a µ-law call on a Twilio stream).
type converter struct {
	call, wire media.Format
	same       bool
	in, out    direction
}

// direction is one way's decode, resample and encode, with its buffers.
type direction struct {
	from, to media.Format
	rs       *media.Resampler
	pcm, rsd []int16
	buf      []byte
}

func newConverter(callF, wireF media.Format) (*converter, error) {
	for _, f := range []media.Format{callF, wireF} {
		if err := f.Check(); err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
	}
	c := &converter{call: callF, wire: wireF, same: callF == wireF}
	c.in = direction{from: callF, to: wireF}
	c.out = direction{from: wireF, to: callF}
	for _, d := range []*direction{&c.in, &c.out} {
		if d.from.Rate != d.to.Rate {
			rs, err := media.NewResampler(d.from.Rate, d.to.Rate)
			if err != nil {
				return nil, fmt.Errorf("stream: %w", err)
			}
			d.rs = rs
		}
	}
	return c, nil
}

// toWire converts the caller's audio; the result is valid until the next
// call.
func (c *converter) toWire(b []byte) []byte {
	if c.same {
		return b
	}
	return c.in.convert(b)
}

// toCall converts the bot's audio; the result is valid until the next
// call.
func (c *converter) toCall(b []byte) []byte {
	if c.same {
		return b
	}
	return c.out.convert(b)
}

func (d *direction) convert(b []byte) []byte {
	if fl, ok := d.from.G711(); ok {
		if tl, ok := d.to.G711(); ok { // the other law: a table
			d.buf = tl.Transcode(d.buf[:0], fl, b)
			return d.buf
		}
		d.pcm = fl.DecodeFrame(d.pcm[:0], b)
	} else {
		d.pcm = media.DecodePCM16LE(d.pcm[:0], b[:len(b)&^1])
	}
	pcm := d.pcm
	if d.rs != nil {
		d.rsd = d.rs.Process(d.rsd[:0], pcm)
		pcm = d.rsd
	}
	if tl, ok := d.to.G711(); ok {
		d.buf = tl.EncodeFrame(d.buf[:0], pcm)
	} else {
		d.buf = media.AppendPCM16LE(d.buf[:0], pcm)
	}
	return d.buf
}

// reset drops the bot's side resampler history (after clear).
func (c *converter) reset() {
	if c.out.rs != nil {
		c.out.rs.Reset()
	}
}
