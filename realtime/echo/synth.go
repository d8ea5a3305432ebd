package echo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os/exec"
)

// Synthesizer turns text into mono 16-bit samples at sampleRate.
type Synthesizer interface {
	Synthesize(ctx context.Context, text string, sampleRate int) ([]int16, error)
}

// Espeak speaks with the espeak-ng command (its WAV output, 22050 Hz,
// resampled to the rate asked for).
type Espeak struct {
	// Path is the espeak-ng binary (default: looked up in PATH).
	Path string
	// Voice is passed as -v when set (for example "en-us").
	Voice string
	// WordsPerMinute is passed as -s when positive.
	WordsPerMinute int
}

// Synthesize runs espeak-ng --stdout and converts its WAV.
func (e Espeak) Synthesize(ctx context.Context, text string, sampleRate int) ([]int16, error) {
	path := e.Path
	if path == "" {
		path = "espeak-ng"
	}
	args := []string{"--stdout"}
	if e.Voice != "" {
		args = append(args, "-v", e.Voice)
	}
	if e.WordsPerMinute > 0 {
		args = append(args, "-s", fmt.Sprint(e.WordsPerMinute))
	}
	args = append(args, "--", text)
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("espeak-ng: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	s, rate, err := parseWAV(out)
	if err != nil {
		return nil, fmt.Errorf("espeak-ng: %w", err)
	}
	return resample(s, rate, sampleRate), nil
}

// Tone is the fallback Synthesizer: a short two-note chime whose length grows
// a little with the text, so something is heard when no TTS is installed.
type Tone struct{}

// Synthesize returns the chime.
func (Tone) Synthesize(_ context.Context, text string, sampleRate int) ([]int16, error) {
	ms := min(300+10*len(text), 1200)
	n := ms * sampleRate / 1000
	s := make([]int16, n)
	for i := range s {
		f := 660.0
		if i > n/2 {
			f = 880
		}
		env := math.Min(1, math.Min(float64(i), float64(n-i))/float64(sampleRate/100))
		s[i] = int16(6000 * env * math.Sin(2*math.Pi*f*float64(i)/float64(sampleRate)))
	}
	return s, nil
}

// DefaultSynthesizer returns Espeak when espeak-ng is on PATH, Tone
// otherwise.
func DefaultSynthesizer() Synthesizer {
	if p, err := exec.LookPath("espeak-ng"); err == nil {
		return Espeak{Path: p}
	}
	return Tone{}
}

var errWAV = errors.New("not a 16-bit PCM mono WAV")

// parseWAV reads a RIFF/WAVE file of 16-bit PCM (mono, or the first
// channel). espeak-ng writes 0xFFFFFFFF sizes when streaming; a data chunk
// then runs to the end.
func parseWAV(b []byte) ([]int16, int, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errWAV
	}
	var rate, channels, bits int
	for p := 12; p+8 <= len(b); {
		id := string(b[p : p+4])
		size := int(binary.LittleEndian.Uint32(b[p+4:]))
		body := b[p+8:]
		if size < 0 || size > len(body) {
			size = len(body)
		}
		switch id {
		case "fmt ":
			if size < 16 || binary.LittleEndian.Uint16(body) != 1 {
				return nil, 0, errWAV
			}
			channels = int(binary.LittleEndian.Uint16(body[2:]))
			rate = int(binary.LittleEndian.Uint32(body[4:]))
			bits = int(binary.LittleEndian.Uint16(body[14:]))
		case "data":
			if rate <= 0 || bits != 16 || channels < 1 {
				return nil, 0, errWAV
			}
			step := 2 * channels
			s := make([]int16, 0, size/step)
			for i := 0; i+1 < size; i += step {
				s = append(s, int16(binary.LittleEndian.Uint16(body[i:])))
			}
			return s, rate, nil
		}
		p += 8 + size + size&1
	}
	return nil, 0, errWAV
}
