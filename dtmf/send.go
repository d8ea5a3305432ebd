package dtmf

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// SendOptions configures how key presses are sent as RFC 4733 events. The
// zero value is usable.
type SendOptions struct {
	// ClockRate is the RTP clock rate of the peer's telephone-event payload
	// type. Default 8000.
	ClockRate int
	// Interval is the time between event packets, normally the audio ptime.
	// Default 20 ms.
	Interval time.Duration
	// Volume is the tone power in -dBm0 written into the payload (0-63).
	// Default 10.
	Volume uint8
}

// Defaults of SendOptions and of the tone generator.
const (
	DefaultSendInterval = 20 * time.Millisecond
	DefaultSendVolume   = 10
	// DefaultKeyDuration is a good length for a sent key press: well above
	// the 40 ms that receivers require, well below what IVRs take for a
	// held key.
	DefaultKeyDuration = 100 * time.Millisecond
	// DefaultToneLevel is the level of each of the two tones, in dBFS
	// (0 dBFS = a full-scale sine).
	DefaultToneLevel = -10.0
	// EndPackets is how many times the final (E bit) packet is sent
	// (RFC 4733 section 2.5.1.4).
	EndPackets = 3
)

var (
	errBadDigit    = errors.New("dtmf: not a DTMF key")
	errBadDuration = errors.New("dtmf: bad key duration")
)

// EventPacket is one RTP packet of a sent event. All packets of one event
// carry the same RTP timestamp (the timestamp of the audio instant the event
// starts at) and consecutive sequence numbers; the caller assigns both.
type EventPacket struct {
	// Payload is the telephone-event payload.
	Payload Payload
	// Marker is the RTP marker bit, set on the first packet only.
	Marker bool
	// Offset is when to send the packet, counted from the start of the event.
	Offset time.Duration
}

// AppendEventPackets appends the packets of one key press of the given
// duration to dst (RFC 4733 section 2.5.1): one packet every Interval from
// the start, each carrying the duration elapsed so far (the first carries 0),
// then the end packet (E bit, final duration) sent EndPackets times, one
// Interval apart so that a burst loss cannot take them all. The caller sends
// no audio for the stream while the event lasts.
func AppendEventPackets(dst []EventPacket, digit byte, duration time.Duration, opts SendOptions) ([]EventPacket, error) {
	code, ok := EventCode(digit)
	if !ok {
		return dst, fmt.Errorf("%w: %q", errBadDigit, digit)
	}
	if opts.ClockRate <= 0 {
		opts.ClockRate = DefaultClockRate
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultSendInterval
	}
	if opts.Volume == 0 {
		opts.Volume = DefaultSendVolume
	}
	units := func(d time.Duration) int64 { return int64(d) * int64(opts.ClockRate) / int64(time.Second) }
	total := units(duration)
	if duration < opts.Interval || total > math.MaxUint16 {
		return dst, fmt.Errorf("%w: %v (want %v to %v)", errBadDuration, duration,
			opts.Interval, time.Duration(math.MaxUint16)*time.Second/time.Duration(opts.ClockRate))
	}
	p := Payload{Event: code, Volume: opts.Volume & 0x3f}
	var off time.Duration
	for ; off < duration; off += opts.Interval {
		p.Duration = uint16(units(off))
		dst = append(dst, EventPacket{Payload: p, Marker: off == 0, Offset: off})
	}
	p.End, p.Duration = true, uint16(total)
	for i := 0; i < EndPackets; i++ {
		dst = append(dst, EventPacket{Payload: p, Offset: off})
		off += opts.Interval
	}
	return dst, nil
}

// lowFreqs and highFreqs are the DTMF row and column frequencies in Hz.
var (
	lowFreqs  = [4]float64{697, 770, 852, 941}
	highFreqs = [4]float64{1209, 1336, 1477, 1633}
)

// keypad maps row, column to the key.
var keypad = [4][4]byte{
	{'1', '2', '3', 'A'},
	{'4', '5', '6', 'B'},
	{'7', '8', '9', 'C'},
	{'*', '0', '#', 'D'},
}

// Frequencies returns the low (row) and high (column) frequencies of a key.
func Frequencies(d byte) (low, high float64, ok bool) {
	d, ok = normalizeDigit(d)
	if !ok {
		return 0, 0, false
	}
	for r := range keypad {
		for c := range keypad[r] {
			if keypad[r][c] == d {
				return lowFreqs[r], highFreqs[c], true
			}
		}
	}
	return 0, 0, false
}

// ToneOptions configures a ToneGenerator. The zero value is usable.
type ToneOptions struct {
	// SampleRate of the PCM written. Default 8000.
	SampleRate int
	// Level of each of the two tones in dBFS (0 dBFS = a full-scale sine).
	// Default -10 dBFS, which stays clear of clipping (two tones peak at
	// -4 dBFS) and well above any receiver's sensitivity.
	Level float64
}

// ToneGenerator writes the dual tone of a key into int16 PCM, for peers that
// did not negotiate telephone-event. It keeps the phase across calls to
// Generate, so a tone may be written one audio frame at a time; it does not
// allocate. It is not safe for concurrent use.
type ToneGenerator struct {
	rate int
	amp  float64
	// Phasors of the two tones and their per-sample rotations.
	re1, im1, c1, s1 float64
	re2, im2, c2, s2 float64
	on               bool
}

// NewToneGenerator returns a silent ToneGenerator.
func NewToneGenerator(opts ToneOptions) *ToneGenerator {
	if opts.SampleRate <= 0 {
		opts.SampleRate = DefaultClockRate
	}
	if opts.Level == 0 {
		opts.Level = DefaultToneLevel
	}
	return &ToneGenerator{
		rate: opts.SampleRate,
		amp:  32767 * math.Pow(10, opts.Level/20),
	}
}

// Start begins the tone of a key, at phase zero.
func (g *ToneGenerator) Start(d byte) error {
	lo, hi, ok := Frequencies(d)
	if !ok {
		return fmt.Errorf("%w: %q", errBadDigit, d)
	}
	w1 := 2 * math.Pi * lo / float64(g.rate)
	w2 := 2 * math.Pi * hi / float64(g.rate)
	g.re1, g.im1, g.c1, g.s1 = 1, 0, math.Cos(w1), math.Sin(w1)
	g.re2, g.im2, g.c2, g.s2 = 1, 0, math.Cos(w2), math.Sin(w2)
	g.on = true
	return nil
}

// Stop ends the tone; Generate then writes silence.
func (g *ToneGenerator) Stop() { g.on = false }

// Generate writes the next len(dst) samples of the tone (silence when
// stopped).
func (g *ToneGenerator) Generate(dst []int16) {
	if !g.on {
		clear(dst)
		return
	}
	re1, im1, re2, im2 := g.re1, g.im1, g.re2, g.im2
	for i := range dst {
		v := g.amp * (im1 + im2)
		dst[i] = int16(math.Round(v))
		re1, im1 = re1*g.c1-im1*g.s1, re1*g.s1+im1*g.c1
		re2, im2 = re2*g.c2-im2*g.s2, re2*g.s2+im2*g.c2
	}
	// Keep the phasors on the unit circle despite rounding.
	n1 := 1 / math.Hypot(re1, im1)
	n2 := 1 / math.Hypot(re2, im2)
	g.re1, g.im1, g.re2, g.im2 = re1*n1, im1*n1, re2*n2, im2*n2
}
