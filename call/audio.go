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
//
// A leg at another rate (a WebRTC leg's Opus decodes at 24 kHz) resamples
// from and to its own rate: nothing at all between a 24 kHz leg and a
// 24 kHz model.
type audioPath struct {
	format      AudioFormat
	leg         Leg
	passthrough bool
	// codec is the conversation's G.711 when it is not passed through.
	codec *media.Codec
	// wideIn and wideOut resample between a leg above 8 kHz (WebRTC's
	// Opus at 24 kHz) and a G.711 conversation; nil for an 8 kHz leg.
	wideIn, wideOut *media.Resampler
	wideBuf         []int16

	// media goroutine only
	inPipe *media.InboundPipeline
	inBuf  []byte

	mu      sync.Mutex // Play comes from the conversation's goroutines
	outPipe *media.OutboundPipeline
	outPCM  []int16
	outWide []int16
}

func newAudioPath(f AudioFormat, leg Leg, passthrough bool) (*audioPath, error) {
	p := &audioPath{format: f, leg: leg, passthrough: passthrough}
	var err error
	switch f.Encoding {
	case EncodingPCM16:
		if p.inPipe, err = media.NewInboundPipelineFrom(leg.Rate(), f.Rate); err != nil {
			return nil, err
		}
		if p.outPipe, err = media.NewOutboundPipelineTo(f.Rate, leg.Rate(), legWriter{leg}); err != nil {
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
		if leg.Rate() != media.ClockRate {
			if p.wideIn, err = media.NewResampler(leg.Rate(), media.ClockRate); err != nil {
				return nil, fmt.Errorf("audio path: %w", err)
			}
			if p.wideOut, err = media.NewResampler(media.ClockRate, leg.Rate()); err != nil {
				return nil, fmt.Errorf("audio path: %w", err)
			}
		}
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
	case p.codec != nil && p.wideIn != nil:
		return p.wideIn.String() + " -> " + p.codec.Name + "(encode) / " + p.codec.Name + "(decode) -> " + p.wideOut.String()
	case p.codec != nil:
		return "PCM(8k) -> " + p.codec.Name + "(encode) / " + p.codec.Name + "(decode) -> PCM(8k)"
	}
	return p.inPipe.String() + " / " + p.outPipe.String()
}

// in converts one frame of the leg's PCM for the conversation (media
// goroutine). The result is valid until the next call.
func (p *audioPath) in(pcm []int16) []byte {
	if p.codec != nil {
		if p.wideIn != nil {
			p.wideBuf = p.wideIn.Process(p.wideBuf[:0], pcm)
			pcm = p.wideBuf
		}
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
		p.leg.Play(itemID, p.widen(p.outPCM))
		return
	}
	p.outPipe.Write(itemID, b)
}

// widen resamples 8 kHz PCM to a wide leg's rate (p.mu held).
func (p *audioPath) widen(pcm []int16) []int16 {
	if p.wideOut == nil {
		return pcm
	}
	p.outWide = p.wideOut.Process(p.outWide[:0], pcm)
	return p.outWide
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
	// In pieces: a greeting rendered at once must not leave the call with
	// buffers its size.
	const chunk = 1920 // 40 ms at 24 kHz
	for len(pcm) > 0 {
		n := min(len(pcm), chunk) &^ 1
		if n == 0 {
			break
		}
		p.outPCM = media.DecodePCM16LE(p.outPCM[:0], pcm[:n])
		p.leg.Play(itemID, p.widen(p.outPCM))
		pcm = pcm[n:]
	}
}

// reset drops what the outbound path carries over (after a barge-in).
func (p *audioPath) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.outPipe != nil {
		p.outPipe.Reset()
	}
	if p.wideOut != nil {
		p.wideOut.Reset()
	}
}

// legWriter lets the outbound pipeline write to a leg.
type legWriter struct{ leg Leg }

func (w legWriter) Write(itemID string, pcm []int16) { w.leg.Play(itemID, pcm) }
