package wav

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"switchboard/media"
	"time"
)

// ErrUnsupported is returned (wrapped, with what was found) for a valid
// WAVE file whose encoding is not 16-bit linear PCM.
var ErrUnsupported = errors.New("wav: unsupported encoding")

var (
	errNotWAV  = errors.New("wav: not a RIFF/WAVE file")
	errNoFmt   = errors.New("wav: no fmt chunk before the data chunk")
	errNoData  = errors.New("wav: no data chunk")
	errBadFmt  = errors.New("wav: malformed fmt chunk")
	errBadRate = errors.New("wav: bad sample rate")
)

// Format tags of the fmt chunk (RFC 2361 and mmreg.h).
const (
	tagPCM        = 0x0001
	tagFloat      = 0x0003
	tagALaw       = 0x0006
	tagMuLaw      = 0x0007
	tagExtensible = 0xFFFE
)

// streamingSize is the chunk size written by programs that cannot seek
// back (espeak-ng to a pipe): the chunk runs to the end of the file.
const streamingSize = 0xFFFFFFFF

// Audio is decoded 16-bit PCM.
type Audio struct {
	// SampleRate in Hz.
	SampleRate int
	// Channels is the number of interleaved channels.
	Channels int
	// Samples are interleaved: frame i of channel c is Samples[i*Channels+c].
	Samples []int16
}

// Frames returns the number of sample frames (samples per channel).
func (a *Audio) Frames() int {
	if a.Channels == 0 {
		return 0
	}
	return len(a.Samples) / a.Channels
}

// Duration returns the length of the audio.
func (a *Audio) Duration() time.Duration {
	if a.SampleRate == 0 {
		return 0
	}
	return time.Duration(a.Frames()) * time.Second / time.Duration(a.SampleRate)
}

// Mono returns the audio as one channel: the samples themselves for mono,
// the average of the channels of each frame otherwise.
func (a *Audio) Mono() []int16 {
	if a.Channels <= 1 {
		return a.Samples
	}
	out := make([]int16, a.Frames())
	for i := range out {
		sum := 0
		for _, s := range a.Samples[i*a.Channels : (i+1)*a.Channels] {
			sum += int(s)
		}
		out[i] = int16(sum / a.Channels)
	}
	return out
}

// ReadFile decodes the WAVE file at path.
func ReadFile(path string) (*Audio, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Decode reads a RIFF/WAVE stream of 16-bit PCM up to the end of its data
// chunk. Chunks other than fmt and data are skipped; a data chunk whose
// size is 0xFFFFFFFF or larger than what follows runs to the end of r.
func Decode(r io.Reader) (*Audio, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, errNotWAV
	}
	if string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return nil, errNotWAV
	}
	var a *Audio
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			if a == nil {
				return nil, errNoFmt
			}
			return nil, errNoData
		}
		id, size := string(ch[0:4]), binary.LittleEndian.Uint32(ch[4:])
		switch id {
		case "fmt ":
			if size < 16 || size > 1024 {
				return nil, fmt.Errorf("%w: %d bytes", errBadFmt, size)
			}
			body := make([]byte, size+size&1)
			if _, err := io.ReadFull(r, body); err != nil {
				return nil, fmt.Errorf("%w: %w", errBadFmt, err)
			}
			var err error
			if a, err = parseFmt(body[:size]); err != nil {
				return nil, err
			}
		case "data":
			if a == nil {
				return nil, errNoFmt
			}
			var src io.Reader = r
			if size != streamingSize {
				src = io.LimitReader(r, int64(size))
			}
			raw, err := io.ReadAll(src)
			if err != nil {
				return nil, fmt.Errorf("wav: read data: %w", err)
			}
			frame := 2 * a.Channels
			raw = raw[:len(raw)/frame*frame] // a truncated file ends on a whole frame
			a.Samples = media.DecodePCM16LE(nil, raw)
			return a, nil
		default:
			if size == streamingSize {
				return nil, errNoData
			}
			if _, err := io.CopyN(io.Discard, r, int64(size)+int64(size&1)); err != nil {
				return nil, errNoData
			}
		}
	}
}

// subFormatTail is the tail shared by the KSDATAFORMAT_SUBTYPE GUIDs of
// WAVE_FORMAT_EXTENSIBLE; their first two bytes are the format tag.
var subFormatTail = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

func parseFmt(b []byte) (*Audio, error) {
	tag := binary.LittleEndian.Uint16(b[0:])
	channels := int(binary.LittleEndian.Uint16(b[2:]))
	rate := binary.LittleEndian.Uint32(b[4:])
	bits := int(binary.LittleEndian.Uint16(b[14:]))
	if tag == tagExtensible {
		if len(b) < 40 || !bytes.Equal(b[26:40], subFormatTail) {
			return nil, fmt.Errorf("%w: WAVE_FORMAT_EXTENSIBLE with an unknown sub-format", ErrUnsupported)
		}
		tag = binary.LittleEndian.Uint16(b[24:])
	}
	switch tag {
	case tagPCM:
	case tagFloat:
		return nil, fmt.Errorf("%w: %d-bit IEEE float; want 16-bit PCM (sox in.wav -b 16 -e signed-integer out.wav)", ErrUnsupported, bits)
	case tagALaw, tagMuLaw:
		return nil, fmt.Errorf("%w: G.711 %s; want 16-bit PCM (sox in.wav -e signed-integer out.wav)", ErrUnsupported, map[uint16]string{tagALaw: "A-law", tagMuLaw: "mu-law"}[tag])
	default:
		return nil, fmt.Errorf("%w: format tag 0x%04x; want 16-bit PCM", ErrUnsupported, tag)
	}
	if bits != 16 {
		return nil, fmt.Errorf("%w: %d-bit PCM; want 16-bit (sox in.wav -b 16 out.wav)", ErrUnsupported, bits)
	}
	if channels < 1 || channels > 16 {
		return nil, fmt.Errorf("%w: %d channels", errBadFmt, channels)
	}
	if rate == 0 || rate > 384000 {
		return nil, fmt.Errorf("%w: %d Hz", errBadRate, rate)
	}
	return &Audio{SampleRate: int(rate), Channels: channels}, nil
}
