package echo

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os/exec"
	"switchboard/media"
	"switchboard/media/wav"
)

// Synthesizer turns text into mono 16-bit samples at sampleRate, in the
// session's voice (a voice id such as "eve"; a synthesizer without voices
// speaks in its own).
type Synthesizer interface {
	Synthesize(ctx context.Context, text, voice string, sampleRate int) ([]int16, error)
}

// Espeak speaks with the espeak-ng command (its WAV output, 22050 Hz,
// resampled to the rate asked for), in its one voice (the engine's
// standalone default; the appliance gives the echo engine its TTS engine,
// which speaks each voice).
type Espeak struct {
	// Path is the espeak-ng binary (default: looked up in PATH).
	Path string
	// Voice is passed as -v when set (for example "en-us").
	Voice string
	// WordsPerMinute is passed as -s when positive.
	WordsPerMinute int
}

// Synthesize runs espeak-ng --stdout and converts its WAV.
func (e Espeak) Synthesize(ctx context.Context, text, _ string, sampleRate int) ([]int16, error) {
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
	a, err := wav.Decode(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("espeak-ng: %w", err)
	}
	return media.Convert(a.Mono(), a.SampleRate, sampleRate), nil
}

// Tone is the fallback Synthesizer: a short two-note chime whose length grows
// a little with the text, so something is heard when no TTS is installed.
type Tone struct{}

// Synthesize returns the chime.
func (Tone) Synthesize(_ context.Context, text, _ string, sampleRate int) ([]int16, error) {
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
