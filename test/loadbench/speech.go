package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"switchboard/media"
)

// speechText is what the continuous caller says: one long run-on
// complaint, commas and no full stop, so espeak-ng's pauses stay short
// (a comma is ~300 ms, a full stop would be ~500 ms and end a turn).
const speechText = "thank you for calling, I would like to ask about the bill I received last month, " +
	"it shows a charge for a service I never ordered, and I have been a customer for many years, " +
	"so I hope you can look into it and remove the charge, my account number is four five six seven, " +
	"and the charge was about forty dollars, I called twice already and nobody could help me, " +
	"the first time I waited on hold for half an hour and then the line went dead, " +
	"and the second time they told me to call back on a weekday"

// Continuous speech is checked as the echo engine's VAD hears it: 10 ms
// frames at or above speechGateDBFS are voiced (turn_detection.threshold
// 0.5), and no unvoiced run, the loop's join included, may reach
// maxSpeechPause (below the default silence_duration_ms of 500 ms), or a
// turn would end.
const (
	speechGateDBFS = -40
	maxSpeechPause = 400 * time.Millisecond
)

// renderSpeech renders speechText with espeak-ng, converts it with sox to
// raw G.711 at 8 kHz in codec's law (its leading and trailing silence
// trimmed, so the loop's join is no pause either) into out, and returns
// its length and its longest pause. A rendering with a pause of
// maxSpeechPause or more is an error: the benchmark would not be the
// continuous speech it claims to be.
func renderSpeech(ctx context.Context, out string, codec media.Codec) (length, pause time.Duration, err error) {
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			return 0, 0, fmt.Errorf("%s is required for -audio continuous (apt install %s): %w", tool, tool, err)
		}
	}
	wav := filepath.Join(filepath.Dir(out), "speech.wav")
	if b, err := exec.CommandContext(ctx, "espeak-ng", "-v", "en-us", "-s", "165", "-w", wav, speechText).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("espeak-ng: %w: %s", err, b)
	}
	law := map[uint8]string{media.PCMA.PayloadType: "al", media.PCMU.PayloadType: "ul"}[codec.PayloadType]
	// silence 1 0.02 1% [reverse, again, reverse]: drop what precedes the
	// first 20 ms above 1% of full scale, at both ends.
	if b, err := exec.CommandContext(ctx, "sox", wav, "-r", "8000", "-c", "1", "-t", law, out,
		"silence", "1", "0.02", "1%", "reverse", "silence", "1", "0.02", "1%", "reverse").CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("sox: %w: %s", err, b)
	}
	audio, err := os.ReadFile(out)
	if err != nil {
		return 0, 0, err
	}
	pause = longestPause(codec.DecodeFrame(nil, audio), 8000)
	length = time.Duration(len(audio)) * time.Second / 8000
	if pause >= maxSpeechPause {
		return length, pause, fmt.Errorf("rendered speech pauses for %v (looped), not continuous: at most %v wanted", pause, maxSpeechPause)
	}
	return length, pause, nil
}

// longestPause is the longest run of unvoiced 10 ms frames of pcm played
// in a loop (the run across the end and the start counts as one).
func longestPause(pcm []int16, rate int) time.Duration {
	n := rate / 100
	var voiced []bool
	for i := 0; i+n <= len(pcm); i += n {
		var sum float64
		for _, v := range pcm[i : i+n] {
			sum += float64(v) * float64(v)
		}
		rms := math.Sqrt(sum / float64(n))
		voiced = append(voiced, rms >= 1 && 20*math.Log10(rms/32768) >= speechGateDBFS)
	}
	longest, run := 0, 0
	for range 2 { // twice round, so the join's run is whole
		for _, v := range voiced {
			if v {
				run = 0
				continue
			}
			run++
			longest = max(longest, min(run, len(voiced)))
		}
	}
	return time.Duration(longest) * 10 * time.Millisecond
}
