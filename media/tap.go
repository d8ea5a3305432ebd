package media

import "time"

// Tap observes the audio frames of a session as they cross its media
// goroutine: each inbound frame handed to the consumer and each outbound
// frame the pacer sends, in the form the session already holds (no decode
// or encode is done for a tap). Both methods run on the media goroutine
// once per frame: they must not block, allocate or keep the slices.
// Call health and recording are taps.
type Tap interface {
	// Inbound is the caller's frame due at f.At: PCM on the decoding path,
	// the codec's bytes in a passthrough.
	Inbound(f Frame)
	// Outbound is the frame sent at f.At: the bytes put on the wire in
	// f.Codec, nil while held (nothing sent), Event when a telephone-event
	// went instead of audio.
	Outbound(f Frame)
}

// Frame is one ptime of audio seen by a Tap.
type Frame struct {
	// At is the frame's scheduled time on the media clock.
	At time.Time
	// Samples is the frame's length in samples at 8 kHz.
	Samples int
	// PCM holds the samples when the session has them decoded; otherwise
	// Coded holds Codec's code words. G.722's words need the call's
	// stateful decoder: a G.722 leg gives its taps PCM instead (the call
	// package's g722Tap), so taps read only G.711 words.
	PCM   []int16
	Coded []byte
	Codec Codec
	// Status is how the jitter buffer filled an inbound frame.
	Status FrameStatus
	// Speech says an outbound frame carried queued audio (false: the
	// pacer's silence).
	Speech bool
	// Event says a telephone-event packet was sent in this frame's slot.
	Event bool
}

// RateTap adapts a Tap to a leg whose PCM is not at 8 kHz (Opus at
// 24 kHz): it resamples the PCM of each frame to 8 kHz and encodes
// outbound frames to PCMU, which is what the taps read (health reads
// the level of the bytes sent, a recording mixes 8 kHz). Frames without
// PCM (passthrough bytes, events, silence while held) pass with their
// length converted. Inbound and outbound each have their own resampler
// and buffers, so the two may run on different goroutines; neither
// allocates once warm.
type RateTap struct {
	tap           Tap
	inRate        int
	outRate       int
	in, out       *Resampler
	inBuf, outBuf []int16
	outCoded      []byte
}

var _ Tap = (*RateTap)(nil)

// NewRateTap returns a tap taking inbound PCM at inRate and outbound PCM
// at outRate, feeding tap.
func NewRateTap(tap Tap, inRate, outRate int) (*RateTap, error) {
	t := &RateTap{tap: tap, inRate: inRate, outRate: outRate}
	var err error
	if t.in, err = NewResampler(inRate, ClockRate); err != nil {
		return nil, err
	}
	if t.out, err = NewResampler(outRate, ClockRate); err != nil {
		return nil, err
	}
	return t, nil
}

// Inbound resamples f's PCM to 8 kHz and hands it on.
func (t *RateTap) Inbound(f Frame) {
	if f.PCM != nil && t.inRate != ClockRate {
		t.inBuf = t.in.Process(t.inBuf[:0], f.PCM)
		f.PCM, f.Samples = t.inBuf, len(t.inBuf)
	} else if f.PCM == nil && f.Coded == nil {
		f.Samples = f.Samples * ClockRate / t.inRate
	}
	t.tap.Inbound(f)
}

// Outbound resamples f's PCM to 8 kHz, encodes it to PCMU and hands it on.
func (t *RateTap) Outbound(f Frame) {
	if f.PCM != nil {
		pcm := f.PCM
		if t.outRate != ClockRate {
			t.outBuf = t.out.Process(t.outBuf[:0], f.PCM)
			pcm = t.outBuf
		}
		t.outCoded = PCMU.EncodeFrame(t.outCoded[:0], pcm)
		f.PCM, f.Coded, f.Codec, f.Samples = nil, t.outCoded, PCMU, len(pcm)
	} else if f.Coded == nil {
		f.Samples = f.Samples * ClockRate / t.outRate
	}
	t.tap.Outbound(f)
}
