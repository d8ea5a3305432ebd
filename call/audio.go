package call

import (
	"fmt"
	"sync"

	"switchboard/media"
)

// audioPath converts between the leg's audio and the conversation's. A
// passthrough (the conversation speaks the leg's G.711) moves bytes
// untouched; otherwise the caller's PCM is resampled (or G.711-encoded)
// for the conversation and its audio decoded and resampled for the leg:
//
//	leg PCM 8k -> Resample(8k->24k) -> PCM16LE -> Conversation.Audio
//	Phone.Play -> PCM16LE -> Resample(24k->8k) -> Leg.Play
type audioPath struct {
	format      AudioFormat
	leg         Leg
	passthrough bool
	// codec is the conversation's G.711 when it is not passed through.
	codec *media.Codec

	// media goroutine only
	inPipe *media.InboundPipeline
	inBuf  []byte

	mu      sync.Mutex // Play comes from the conversation's goroutines
	outPipe *media.OutboundPipeline
	outPCM  []int16
}

func newAudioPath(f AudioFormat, leg Leg, passthrough bool) (*audioPath, error) {
	if leg.Rate() != media.ClockRate {
		return nil, fmt.Errorf("audio path: a leg at %d Hz is not supported", leg.Rate())
	}
	p := &audioPath{format: f, leg: leg, passthrough: passthrough}
	var err error
	switch f.Encoding {
	case EncodingPCM16:
		if p.inPipe, err = media.NewInboundPipeline(f.Rate); err != nil {
			return nil, err
		}
		if p.outPipe, err = media.NewOutboundPipeline(f.Rate, legWriter{leg}); err != nil {
			return nil, err
		}
	case EncodingPCMU, EncodingPCMA:
		if f.Rate != media.ClockRate {
			return nil, fmt.Errorf("audio path: G.711 at %d Hz", f.Rate)
		}
		c := media.PCMU
		if f.Encoding == EncodingPCMA {
			c = media.PCMA
		}
		p.codec = &c
	default:
		return nil, fmt.Errorf("audio path: unknown encoding %q", f.Encoding)
	}
	return p, nil
}

// String shows the chain for the call's log.
func (p *audioPath) String() string {
	switch {
	case p.passthrough:
		return p.format.Encoding + " passthrough"
	case p.codec != nil:
		return "PCM(8k) -> " + p.codec.Name + "(encode) / " + p.codec.Name + "(decode) -> PCM(8k)"
	}
	return p.inPipe.String() + " / " + p.outPipe.String()
}

// in converts one frame of the leg's PCM for the conversation (media
// goroutine). The result is valid until the next call.
func (p *audioPath) in(pcm []int16) []byte {
	if p.codec != nil {
		p.inBuf = p.codec.EncodeFrame(p.inBuf[:0], pcm)
	} else {
		p.inBuf = p.inPipe.Process(p.inBuf[:0], pcm)
	}
	return p.inBuf
}

// play queues the conversation's audio on the leg.
func (p *audioPath) play(itemID string, b []byte) {
	if p.passthrough {
		p.leg.PlayCoded(itemID, b)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.codec != nil {
		p.outPCM = p.codec.DecodeFrame(p.outPCM[:0], b)
		p.leg.Play(itemID, p.outPCM)
		return
	}
	p.outPipe.Write(itemID, b)
}

// playPCM queues PCM16LE at the conversation's rate on the leg.
func (p *audioPath) playPCM(itemID string, pcm []byte) {
	if p.outPipe != nil {
		p.mu.Lock()
		p.outPipe.Write(itemID, pcm)
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outPCM = media.DecodePCM16LE(p.outPCM[:0], pcm)
	p.leg.Play(itemID, p.outPCM)
}

// reset drops what the outbound path carries over (after a barge-in).
func (p *audioPath) reset() {
	if p.outPipe == nil {
		return
	}
	p.mu.Lock()
	p.outPipe.Reset()
	p.mu.Unlock()
}

// legWriter lets the outbound pipeline write to a leg.
type legWriter struct{ leg Leg }

func (w legWriter) Write(itemID string, pcm []int16) { w.leg.Play(itemID, pcm) }
