package media

import (
	"fmt"

	"switchboard/media/opus"
)

// Decoder turns a codec's frames into PCM at its Rate: one interface for
// G.711, G.722 and Opus, so a session decodes whatever its leg speaks the
// same way. A Decoder is stateful (G.722's adaptive predictors, Opus's
// concealment) and belongs to one stream; it is not safe for concurrent
// use.
type Decoder interface {
	// Decode appends the PCM of one frame's payload to dst.
	Decode(dst []int16, payload []byte) ([]int16, error)
	// Conceal appends samples (at Rate) standing in for audio that was
	// lost just before next: rebuilt from next's forward error
	// correction where the codec carries it (Opus), else the codec's
	// concealment, or silence. next may be nil.
	Conceal(dst []int16, next []byte, samples int) ([]int16, error)
	// Rate is the sample rate of the PCM.
	Rate() int
	// String names the stage, e.g. "PCMU(decode)", "Opus(decode 24k)".
	String() string
	// Close frees the decoder; it is idempotent.
	Close() error
}

// Encoder turns PCM at its Rate into a codec's frames; stateful like a
// Decoder and not safe for concurrent use.
type Encoder interface {
	// Encode appends the payload of one frame of pcm to dst.
	Encode(dst []byte, pcm []int16) ([]byte, error)
	// Rate is the sample rate of the PCM it takes.
	Rate() int
	// String names the stage, e.g. "G722(encode)".
	String() string
	// Close frees the encoder; it is idempotent.
	Close() error
}

// EncoderOptions tune an Opus encoder (the other codecs have nothing to
// tune). Zero fields take the defaults.
type EncoderOptions struct {
	// Bitrate is the target in bit/s (default OpusBitrate); a peer's
	// maxaveragebitrate lowers it (RFC 7587 section 6.1).
	Bitrate int
	// MaxPlaybackRate limits the coded band to what the peer renders
	// (RFC 7587 maxplaybackrate); 0 leaves it open.
	MaxPlaybackRate int
	// Complexity is libopus's 0-10 (default OpusComplexity).
	Complexity int
}

// Opus encoder defaults: a clean voice at 24 kHz for about half of
// libopus's default cost per frame (docs/benchmarks.md).
const (
	OpusBitrate    = 32000
	OpusComplexity = 5
)

// NewDecoder returns a decoder of c's frames. rate is the PCM rate wanted:
// Opus decodes at any of its rates (8, 12, 16, 24, 48 kHz); G.711 always
// gives 8 kHz and G.722 16 kHz, whatever rate says.
func (c Codec) NewDecoder(rate int) (Decoder, error) {
	switch {
	case c.opus:
		d, err := opus.NewDecoder(rate)
		if err != nil {
			return nil, fmt.Errorf("new decoder: %w", err)
		}
		return opusDecoder{d}, nil
	case c.g722:
		return &g722Decoder{dec: NewG722Decoder()}, nil
	case c.Name == "":
		return nil, fmt.Errorf("new decoder: %w", errUnknownCodec)
	}
	return g711Coder{c}, nil
}

// NewEncoder returns an encoder to c from PCM at rate (Opus: any of its
// rates; G.711 takes 8 kHz and G.722 16 kHz, whatever rate says).
func (c Codec) NewEncoder(rate int, o EncoderOptions) (Encoder, error) {
	switch {
	case c.opus:
		return newOpusEncoder(rate, o)
	case c.g722:
		return &g722Encoder{enc: NewG722Encoder()}, nil
	case c.Name == "":
		return nil, fmt.Errorf("new encoder: %w", errUnknownCodec)
	}
	return g711Coder{c}, nil
}

// g711Coder codes G.711 by table: it keeps no state.
type g711Coder struct{ c Codec }

func (g g711Coder) Decode(dst []int16, payload []byte) ([]int16, error) {
	return g.c.DecodeFrame(dst, payload), nil
}

// Conceal gives silence: a G.711 stream is concealed on its code words,
// in the jitter buffer, before anything decodes it.
func (g g711Coder) Conceal(dst []int16, _ []byte, samples int) ([]int16, error) {
	n := len(dst)
	dst = grow(dst, samples)
	clear(dst[n:])
	return dst, nil
}

func (g g711Coder) Encode(dst []byte, pcm []int16) ([]byte, error) {
	return g.c.EncodeFrame(dst, pcm), nil
}

func (g g711Coder) Rate() int      { return ClockRate }
func (g g711Coder) String() string { return g.c.Name }
func (g g711Coder) Close() error   { return nil }

// g722Decoder decodes G.722 in order; a lost frame plays as silence and
// leaves the predictors alone.
type g722Decoder struct{ dec *G722Decoder }

func (g *g722Decoder) Decode(dst []int16, payload []byte) ([]int16, error) {
	return g.dec.Decode(dst, payload), nil
}

func (g *g722Decoder) Conceal(dst []int16, _ []byte, samples int) ([]int16, error) {
	n := len(dst)
	dst = grow(dst, samples)
	clear(dst[n:])
	return dst, nil
}

func (g *g722Decoder) Rate() int      { return G722Rate }
func (g *g722Decoder) String() string { return "G722(decode)" }
func (g *g722Decoder) Close() error   { return nil }

// g722Encoder encodes 16 kHz PCM, carrying an odd last sample over to the
// next write (G.722 codes samples in pairs).
type g722Encoder struct {
	enc *G722Encoder
	odd []int16
}

func (g *g722Encoder) Encode(dst []byte, pcm []int16) ([]byte, error) {
	if len(g.odd) > 0 {
		pcm = append(g.odd, pcm...)
	}
	dst = g.enc.Encode(dst, pcm)
	g.odd = append(g.odd[:0], pcm[len(pcm)&^1:]...)
	return dst, nil
}

func (g *g722Encoder) Rate() int      { return G722Rate }
func (g *g722Encoder) String() string { return "G722(encode)" }
func (g *g722Encoder) Close() error   { return nil }

// opusDecoder is libopus's decoder behind Decoder.
type opusDecoder struct{ d *opus.Decoder }

func (o opusDecoder) Decode(dst []int16, payload []byte) ([]int16, error) {
	return o.d.Decode(dst, payload, 0)
}

// Conceal rebuilds the lost audio from next's FEC data when next is
// there, else with libopus's packet loss concealment.
func (o opusDecoder) Conceal(dst []int16, next []byte, samples int) ([]int16, error) {
	if next != nil {
		return o.d.DecodeFEC(dst, next, samples)
	}
	return o.d.Decode(dst, nil, samples)
}

func (o opusDecoder) Rate() int      { return o.d.Rate() }
func (o opusDecoder) String() string { return "Opus(decode " + khz(o.d.Rate()) + ")" }
func (o opusDecoder) Close() error   { return o.d.Close() }

// opusEncoder is libopus's encoder behind Encoder.
type opusEncoder struct{ e *opus.Encoder }

func newOpusEncoder(rate int, o EncoderOptions) (Encoder, error) {
	bitrate := OpusBitrate
	if o.Bitrate >= 6000 && o.Bitrate < bitrate {
		bitrate = o.Bitrate
	}
	e, err := opus.NewEncoder(rate, bitrate)
	if err != nil {
		return nil, fmt.Errorf("new encoder: %w", err)
	}
	complexity := OpusComplexity
	if o.Complexity > 0 {
		complexity = o.Complexity
	}
	// A setting libopus refuses leaves its default: the stream still works.
	_ = e.SetComplexity(complexity)
	if o.MaxPlaybackRate >= ClockRate && o.MaxPlaybackRate < rate {
		_ = e.SetMaxPlaybackRate(o.MaxPlaybackRate)
	}
	return opusEncoder{e}, nil
}

func (o opusEncoder) Encode(dst []byte, pcm []int16) ([]byte, error) { return o.e.Encode(dst, pcm) }
func (o opusEncoder) Rate() int                                      { return o.e.Rate() }
func (o opusEncoder) String() string                                 { return "Opus(encode " + khz(o.e.Rate()) + ")" }
func (o opusEncoder) Close() error                                   { return o.e.Close() }
