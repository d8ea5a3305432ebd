package opus

/*
#cgo pkg-config: opus
#include <opus.h>

static int sb_set_bitrate(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_BITRATE(v)); }
static int sb_set_fec(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(v)); }
static int sb_set_loss(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(v)); }
static int sb_set_signal_voice(OpusEncoder *e) { return opus_encoder_ctl(e, OPUS_SET_SIGNAL(OPUS_SIGNAL_VOICE)); }
static int sb_set_complexity(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(v)); }
static int sb_get_complexity(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_COMPLEXITY(v)); }
static int sb_set_max_bandwidth(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_MAX_BANDWIDTH(v)); }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Rates libopus encodes from and decodes to.
var rates = map[int]bool{8000: true, 12000: true, 16000: true, 24000: true, 48000: true}

// MaxFrame is the largest frame libopus decodes: 120 ms at 48 kHz.
const MaxFrame = 5760

// ErrRate means a sample rate libopus does not take.
var ErrRate = errors.New("opus: rate must be 8000, 12000, 16000, 24000 or 48000")

// Error is a libopus error code.
type Error int

func (e Error) Error() string { return "opus: " + C.GoString(C.opus_strerror(C.int(e))) }

// Encoder encodes mono PCM16 frames. It is safe for one goroutine at a
// time; Close frees it and is idempotent.
type Encoder struct {
	mu   sync.Mutex
	enc  *C.OpusEncoder
	rate int
}

// NewEncoder returns a VoIP encoder of mono speech PCM at rate, with in-band FEC
// on and the bitrate given (0 leaves libopus's default).
func NewEncoder(rate, bitrate int) (*Encoder, error) {
	if !rates[rate] {
		return nil, ErrRate
	}
	var code C.int
	enc := C.opus_encoder_create(C.opus_int32(rate), 1, C.OPUS_APPLICATION_VOIP, &code)
	if code != C.OPUS_OK || enc == nil {
		return nil, fmt.Errorf("opus encoder: %w", Error(code))
	}
	if bitrate > 0 {
		C.sb_set_bitrate(enc, C.opus_int32(bitrate))
	}
	C.sb_set_fec(enc, 1)
	C.sb_set_loss(enc, 5)
	// Speech: the modes with SILK, whose frames carry the FEC data.
	C.sb_set_signal_voice(enc)
	return &Encoder{enc: enc, rate: rate}, nil
}

// Rate is the encoder's input rate.
func (e *Encoder) Rate() int { return e.rate }

// SetBitrate changes the target bitrate in bit/s (a peer's
// maxaveragebitrate, RFC 7587 section 6.1).
func (e *Encoder) SetBitrate(bitrate int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc == nil {
		return errors.New("opus: encoder closed")
	}
	if code := C.sb_set_bitrate(e.enc, C.opus_int32(bitrate)); code != C.OPUS_OK {
		return fmt.Errorf("opus bitrate %d: %w", bitrate, Error(code))
	}
	return nil
}

// SetComplexity sets the encoder's computational complexity, 0 to 10
// (libopus's default is 9 or 10): lower is cheaper and sounds a little
// worse.
func (e *Encoder) SetComplexity(c int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc == nil {
		return errors.New("opus: encoder closed")
	}
	if code := C.sb_set_complexity(e.enc, C.opus_int32(c)); code != C.OPUS_OK {
		return fmt.Errorf("opus complexity %d: %w", c, Error(code))
	}
	return nil
}

// Complexity returns the encoder's complexity.
func (e *Encoder) Complexity() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var v C.opus_int32
	if e.enc == nil || C.sb_get_complexity(e.enc, &v) != C.OPUS_OK {
		return -1
	}
	return int(v)
}

// SetMaxPlaybackRate limits the coded audio band to what a receiver
// playing at rate Hz can render (a peer's maxplaybackrate, RFC 7587
// section 6.1): narrowband up to 8000, then mediumband, wideband,
// super-wideband (24000) and fullband.
func (e *Encoder) SetMaxPlaybackRate(rate int) error {
	bw := C.opus_int32(C.OPUS_BANDWIDTH_FULLBAND)
	switch {
	case rate <= 8000:
		bw = C.OPUS_BANDWIDTH_NARROWBAND
	case rate <= 12000:
		bw = C.OPUS_BANDWIDTH_MEDIUMBAND
	case rate <= 16000:
		bw = C.OPUS_BANDWIDTH_WIDEBAND
	case rate <= 24000:
		bw = C.OPUS_BANDWIDTH_SUPERWIDEBAND
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc == nil {
		return errors.New("opus: encoder closed")
	}
	if code := C.sb_set_max_bandwidth(e.enc, bw); code != C.OPUS_OK {
		return fmt.Errorf("opus max bandwidth: %w", Error(code))
	}
	return nil
}

// Encode appends the Opus packet of one frame (2.5, 5, 10, 20, 40 or 60
// ms of mono PCM at the encoder's rate) to dst.
func (e *Encoder) Encode(dst []byte, pcm []int16) ([]byte, error) {
	if len(pcm) == 0 {
		return dst, errors.New("opus: empty frame")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc == nil {
		return dst, errors.New("opus: encoder closed")
	}
	const maxPacket = 1275 // RFC 6716 section 3.2.1: the largest frame
	base := len(dst)
	dst = append(dst, make([]byte, maxPacket)...)
	n := C.opus_encode(e.enc, (*C.opus_int16)(unsafe.Pointer(&pcm[0])), C.int(len(pcm)),
		(*C.uchar)(unsafe.Pointer(&dst[base])), C.opus_int32(maxPacket))
	if n < 0 {
		return dst[:base], fmt.Errorf("opus encode: %w", Error(n))
	}
	return dst[:base+int(n)], nil
}

// Close frees the encoder.
func (e *Encoder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.enc != nil {
		C.opus_encoder_destroy(e.enc)
		e.enc = nil
	}
	return nil
}

// Decoder decodes Opus packets to mono PCM16. It is safe for one
// goroutine at a time; Close frees it and is idempotent.
type Decoder struct {
	mu   sync.Mutex
	dec  *C.OpusDecoder
	rate int
	buf  []int16
}

// NewDecoder returns a mono decoder whose output is at rate.
func NewDecoder(rate int) (*Decoder, error) {
	if !rates[rate] {
		return nil, ErrRate
	}
	var code C.int
	dec := C.opus_decoder_create(C.opus_int32(rate), 1, &code)
	if code != C.OPUS_OK || dec == nil {
		return nil, fmt.Errorf("opus decoder: %w", Error(code))
	}
	return &Decoder{dec: dec, rate: rate, buf: make([]int16, MaxFrame*rate/48000)}, nil
}

// Rate is the decoder's output rate.
func (d *Decoder) Rate() int { return d.rate }

// Decode appends the PCM of one packet to dst. A nil packet conceals a
// lost one (packet loss concealment) of samples length (a multiple of
// 2.5 ms at the decoder's rate).
func (d *Decoder) Decode(dst []int16, packet []byte, samples int) ([]int16, error) {
	return d.decode(dst, packet, samples, false)
}

// DecodeFEC appends samples of PCM rebuilt for a lost packet from the
// in-band forward error correction data carried by packet, the one that
// followed it (RFC 6716 section 2.1.7: LBRR frames). Without FEC data in
// packet libopus conceals the loss as Decode(nil) would; packet itself is
// decoded afterwards by Decode, as usual.
func (d *Decoder) DecodeFEC(dst []int16, packet []byte, samples int) ([]int16, error) {
	if len(packet) == 0 {
		return d.decode(dst, nil, samples, false)
	}
	return d.decode(dst, packet, samples, true)
}

func (d *Decoder) decode(dst []int16, packet []byte, samples int, fec bool) ([]int16, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dec == nil {
		return dst, errors.New("opus: decoder closed")
	}
	var data *C.uchar
	frame := len(d.buf)
	if len(packet) > 0 && !fec {
		data = (*C.uchar)(unsafe.Pointer(&packet[0]))
	} else if samples > 0 && samples < frame {
		frame = samples
	}
	flag := C.int(0)
	if fec {
		data, flag = (*C.uchar)(unsafe.Pointer(&packet[0])), 1
	}
	n := C.opus_decode(d.dec, data, C.opus_int32(len(packet)), (*C.opus_int16)(unsafe.Pointer(&d.buf[0])), C.int(frame), flag)
	if n < 0 {
		return dst, fmt.Errorf("opus decode: %w", Error(n))
	}
	return append(dst, d.buf[:n]...), nil
}

// PacketSamples is the number of samples at 48 kHz packet holds, as
// libopus counts them (opus_packet_get_nb_samples).
func PacketSamples(packet []byte) (int, error) {
	if len(packet) == 0 {
		return 0, Error(C.OPUS_BAD_ARG)
	}
	n := C.opus_packet_get_nb_samples((*C.uchar)(unsafe.Pointer(&packet[0])), C.opus_int32(len(packet)), 48000)
	if n < 0 {
		return 0, Error(n)
	}
	return int(n), nil
}

// Close frees the decoder.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dec != nil {
		C.opus_decoder_destroy(d.dec)
		d.dec = nil
	}
	return nil
}
