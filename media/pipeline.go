package media

import (
	"fmt"
)

// InboundPipeline turns the phone's 8 kHz frames into the model's input:
// PCM16 little-endian mono at the model's rate ("audio/pcm"). Not safe for
// concurrent use; it runs on the session's media goroutine.
type InboundPipeline struct {
	rs  *Resampler
	pcm []int16
}

// NewInboundPipeline returns a pipeline from 8 kHz to modelRate (8000,
// 16000, 24000 or 48000).
func NewInboundPipeline(modelRate int) (*InboundPipeline, error) {
	return NewInboundPipelineFrom(ClockRate, modelRate)
}

// NewInboundPipelineFrom returns a pipeline from a leg's legRate (a
// WebRTC leg decodes Opus at 24 kHz) to modelRate; equal rates copy.
func NewInboundPipelineFrom(legRate, modelRate int) (*InboundPipeline, error) {
	rs, err := NewResampler(legRate, modelRate)
	if err != nil {
		return nil, fmt.Errorf("inbound pipeline: %w", err)
	}
	return &InboundPipeline{rs: rs, pcm: make([]int16, 0, modelRate/25)}, nil
}

// String shows the chain, e.g. "Resample(8k->24k) -> PCM16LE".
func (p *InboundPipeline) String() string { return p.rs.String() + " -> PCM16LE" }

// Process appends the model-rate PCM16LE bytes of one 8 kHz frame to dst.
// It does not allocate once dst has capacity.
func (p *InboundPipeline) Process(dst []byte, frame []int16) []byte {
	p.pcm = p.rs.Process(p.pcm[:0], frame)
	return AppendPCM16LE(dst, p.pcm)
}

// Reset clears the resampler state (a new stream).
func (p *InboundPipeline) Reset() { p.rs.Reset() }

// OutboundPipeline takes the model's PCM16LE audio deltas, resamples them
// to 8 kHz and queues them on a Playout under their item id. Deltas may
// split a sample across two messages; the odd byte is carried over. Not
// safe for concurrent use (one model reader goroutine calls it).
type OutboundPipeline struct {
	rs       *Resampler
	q        FrameWriter
	in, out  []int16
	carry    byte
	hasCarry bool
}

// FrameWriter takes PCM at the leg's rate (8 kHz for a phone) tagged
// with an item id: a Playout, or a call's leg.
type FrameWriter interface {
	Write(itemID string, pcm []int16)
}

// NewOutboundPipeline returns a pipeline from modelRate to 8 kHz into q.
func NewOutboundPipeline(modelRate int, q FrameWriter) (*OutboundPipeline, error) {
	return NewOutboundPipelineTo(modelRate, ClockRate, q)
}

// NewOutboundPipelineTo returns a pipeline from modelRate to a leg's
// legRate into q; equal rates only carry the odd byte over.
func NewOutboundPipelineTo(modelRate, legRate int, q FrameWriter) (*OutboundPipeline, error) {
	rs, err := NewResampler(modelRate, legRate)
	if err != nil {
		return nil, fmt.Errorf("outbound pipeline: %w", err)
	}
	return &OutboundPipeline{rs: rs, q: q}, nil
}

// String shows the chain, e.g. "PCM16LE -> Resample(24k->8k) -> Playout".
func (p *OutboundPipeline) String() string { return "PCM16LE -> " + p.rs.String() + " -> Playout" }

// Write resamples one delta of item itemID and queues it, 20 ms of its
// rate at a time (what the resampler's buffers hold from the start): a
// long write (a greeting rendered at once, a provider's 100 ms delta)
// goes through in pieces, so the pipeline's buffers stay a frame long for
// the whole call.
func (p *OutboundPipeline) Write(itemID string, pcm16le []byte) {
	piece := 2 * p.rs.frame()
	for len(pcm16le) > piece {
		p.write(itemID, pcm16le[:piece])
		pcm16le = pcm16le[piece:]
	}
	p.write(itemID, pcm16le)
}

func (p *OutboundPipeline) write(itemID string, pcm16le []byte) {
	p.in = p.in[:0]
	if p.hasCarry && len(pcm16le) > 0 {
		p.in = append(p.in, int16(uint16(p.carry)|uint16(pcm16le[0])<<8))
		pcm16le = pcm16le[1:]
		p.hasCarry = false
	}
	even := len(pcm16le) &^ 1
	p.in = DecodePCM16LE(p.in, pcm16le[:even])
	if even < len(pcm16le) {
		p.carry, p.hasCarry = pcm16le[even], true
	}
	p.out = p.rs.Process(p.out[:0], p.in)
	p.q.Write(itemID, p.out)
}

// Reset drops the carried byte and the resampler history, e.g. after a
// barge-in Flush, so the next response starts clean.
func (p *OutboundPipeline) Reset() {
	p.hasCarry = false
	p.rs.Reset()
}
