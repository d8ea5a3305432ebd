package speech

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

var errBadWAV = errors.New("not a 16-bit PCM WAV")

// wavHeader returns the 44-byte header of a mono 16-bit PCM WAV file
// holding dataLen bytes.
func wavHeader(rate, dataLen int) []byte {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+dataLen))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], uint32(rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(rate*2))
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(dataLen))
	return h
}

// parseWAV reads a mono 16-bit PCM WAV. The sizes in the RIFF and data
// headers are not trusted: espeak-ng writing to a pipe cannot seek back to
// fill them in, so the data runs to the end of the buffer.
func parseWAV(b []byte) (pcm []int16, rate int, err error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, fmt.Errorf("%w: no RIFF/WAVE header", errBadWAV)
	}
	p := 12
	var channels, bits int
	for p+8 <= len(b) {
		id, size := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:]))
		body := p + 8
		switch id {
		case "fmt ":
			if body+16 > len(b) {
				return nil, 0, fmt.Errorf("%w: short fmt chunk", errBadWAV)
			}
			if binary.LittleEndian.Uint16(b[body:]) != 1 {
				return nil, 0, fmt.Errorf("%w: format is not PCM", errBadWAV)
			}
			channels = int(binary.LittleEndian.Uint16(b[body+2:]))
			rate = int(binary.LittleEndian.Uint32(b[body+4:]))
			bits = int(binary.LittleEndian.Uint16(b[body+14:]))
		case "data":
			if channels != 1 || bits != 16 || rate <= 0 {
				return nil, 0, fmt.Errorf("%w: %d channels, %d bits, %d Hz", errBadWAV, channels, bits, rate)
			}
			end := len(b)
			if size >= 0 && body+size <= len(b) && size < 0x7fff0000 {
				end = body + size
			}
			data := b[body:end]
			pcm = make([]int16, len(data)/2)
			for i := range pcm {
				pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
			}
			return pcm, rate, nil
		}
		if size < 0 || body+size > len(b) {
			break
		}
		p = body + size + size%2
	}
	return nil, 0, fmt.Errorf("%w: no data chunk", errBadWAV)
}

// pcmBytes is pcm as signed 16-bit little-endian bytes.
func pcmBytes(pcm []int16) []byte {
	b := make([]byte, 2*len(pcm))
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(s))
	}
	return b
}

// pcmFromBytes reads signed 16-bit little-endian samples (a trailing odd
// byte is dropped).
func pcmFromBytes(b []byte) []int16 {
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return pcm
}

// round3 rounds seconds to the millisecond for JSON.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// round2 rounds seconds to two decimals for JSON.
func round2(v float64) float64 { return math.Round(v*100) / 100 }
