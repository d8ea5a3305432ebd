package speech

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"switchboard/media"
	"switchboard/media/wav"
)

// ErrToolMissing is returned when a program the local engine needs
// (espeak-ng, lame) is not installed.
var ErrToolMissing = errors.New("program not installed")

// Encoder turns mono PCM into the bytes of an output format.
type Encoder struct {
	// LamePath is the LAME binary used for mp3 (default "lame").
	LamePath string
}

// Encode encodes pcm, sampled at f.SampleRate, in f's codec.
//
// mp3 goes through LAME in constant bit rate at the requested sample rate;
// MPEG-2 (16-24 kHz) and MPEG-2.5 (8 kHz) cap the bit rate (160 and 64
// kbps): the endpoints refuse a higher one (checkMP3), which LAME would
// clamp.
func (e Encoder) Encode(ctx context.Context, pcm []int16, f Format) ([]byte, error) {
	switch f.Codec {
	case CodecPCM:
		return media.AppendPCM16LE(nil, pcm), nil
	case CodecWAV:
		return wav.Encode(pcm, f.SampleRate), nil
	case CodecMulaw:
		return media.PCMU.EncodeFrame(nil, pcm), nil
	case CodecAlaw:
		return media.PCMA.EncodeFrame(nil, pcm), nil
	case CodecMP3:
		return e.mp3(ctx, pcm, f)
	}
	return nil, fmt.Errorf("encode: unknown codec %q", f.Codec)
}

func (e Encoder) mp3(ctx context.Context, pcm []int16, f Format) ([]byte, error) {
	bin := e.LamePath
	if bin == "" {
		bin = "lame"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is needed for mp3 output (Debian package lame, installed by make deps)", ErrToolMissing, bin)
	}
	khz := strconv.FormatFloat(float64(f.SampleRate)/1000, 'f', -1, 64)
	br := f.BitRate
	if br == 0 {
		br = DefaultFormat.BitRate
	}
	cmd := exec.CommandContext(ctx, path, "--quiet", "-r", "-s", khz, "--bitwidth", "16", "--signed", "--little-endian",
		"-m", "m", "--cbr", "-b", strconv.Itoa(br/1000), "--resample", khz, "-", "-")
	cmd.Stdin = bytes.NewReader(media.AppendPCM16LE(nil, pcm))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("lame: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}
