package echo

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
)

func espeak(t *testing.T) Espeak {
	t.Helper()
	p, err := exec.LookPath("espeak-ng")
	require.NoError(t, err, "espeak-ng must be installed (make deps)")
	return Espeak{Path: p}
}

func TestEspeakSynthesizes24kSpeech(t *testing.T) {
	s, err := espeak(t).Synthesize(context.Background(), "Welcome to switchboard.", "", 24000)
	require.NoError(t, err)
	require.Greater(t, len(s), 24000/2, "at least half a second of speech")
	require.Less(t, len(s), 24000*5)
	require.Greater(t, frameDBFS(s), -40.0, "audible")
	require.IsType(t, Espeak{}, DefaultSynthesizer())
}

func TestEspeakFailureIsReported(t *testing.T) {
	_, err := Espeak{Path: "/nonexistent/espeak-ng"}.Synthesize(context.Background(), "x", "", 24000)
	require.Error(t, err)
}

func TestToneFallback(t *testing.T) {
	s, err := Tone{}.Synthesize(context.Background(), "hello", "", 8000)
	require.NoError(t, err)
	require.Equal(t, 350*8, len(s))
	require.Greater(t, frameDBFS(s), -30.0)
}

// TestEchoRepeatsEspeakSpeech feeds real synthetic speech through the VAD: one
// turn, and the echo returns the committed audio (at telephone quality).
func TestEchoRepeatsEspeakSpeech(t *testing.T) {
	speech, err := espeak(t).Synthesize(context.Background(), "Hello, I would like to check my order status please.", "", 24000)
	require.NoError(t, err)
	pcmFmt := format{typ: realtime.FormatPCM, rate: 24000}
	in := cat(pcm(400, 0), pcmFmt.encode(nil, speech), pcm(1200, 0))
	s := open(t, Options{Unpaced: true, Synthesizer: Tone{}, MaxTurn: 10 * time.Second}, realtime.SessionConfig{}) // the whole turn is kept
	feed(t, s, in, 960)
	evs := until(t, s, realtime.TypeResponseDone)
	started := find[*realtime.InputAudioBufferSpeechStarted](t, evs)
	stopped := find[*realtime.InputAudioBufferSpeechStopped](t, evs)
	require.InDelta(t, 100, started.AudioStartMs, 60, "speech starts at 400 ms, minus the 300 ms prefix")
	sameSpeech(t, in[started.AudioStartMs*48:stopped.AudioEndMs*48], deltas(evs))
	require.Contains(t, find[*realtime.ResponseOutputAudioTranscriptDone](t, evs).Transcript, "(echo) you spoke for")
	speechMs := len(speech) / 24
	require.Greater(t, stopped.AudioEndMs, 400+speechMs/2, "the turn covers the speech")
	require.LessOrEqual(t, stopped.AudioEndMs, 400+speechMs+500+30, "and ends one silence_duration after it")
	select {
	case e := <-s.Events():
		t.Fatalf("one utterance must be one turn, got %s", e.EventType())
	case <-time.After(100 * time.Millisecond):
	}
}

func TestEchoSpeaksGreetingWithEspeak(t *testing.T) {
	s := open(t, Options{Unpaced: true, Synthesizer: espeak(t)}, realtime.SessionConfig{})
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, &realtime.ConversationItemCreate{Item: realtime.UserText("Thank you for calling.")}))
	require.NoError(t, s.Send(ctx, &realtime.ResponseCreate{}))
	evs := until(t, s, realtime.TypeResponseDone)
	audio := deltas(evs)
	require.Greater(t, len(audio), 48*500, "more than half a second of speech")
	require.Greater(t, frameDBFS(pcmFmt().decode(nil, audio)), -45.0)
	require.Equal(t, "Thank you for calling.", find[*realtime.ResponseOutputAudioTranscriptDone](t, evs).Transcript)
}

func pcmFmt() format { return format{typ: realtime.FormatPCM, rate: 24000} }

// TestEchoRepeatsASentenceWholeByDefault: a demo caller's sentence of
// 5-8 s (espeak speaking one, then 7 s of speech-like tone) comes back
// whole with the engine's defaults, kept at 8 kHz µ-law.
func TestEchoRepeatsASentenceWholeByDefault(t *testing.T) {
	speech, err := espeak(t).Synthesize(context.Background(),
		"Hello, this is a caller testing the demo line: I would like to hear this whole sentence repeated back to me, please.", "", 24000)
	require.NoError(t, err)
	require.Greater(t, len(speech), 5*24000, "a sentence of more than 5 s")
	s := open(t, Options{Unpaced: true, Synthesizer: Tone{}}, realtime.SessionConfig{})
	in := cat(pcm(400, 0), pcmFmt().encode(nil, speech), pcm(1200, 0))
	feed(t, s, in, 960)
	evs := until(t, s, realtime.TypeResponseDone)
	started := find[*realtime.InputAudioBufferSpeechStarted](t, evs)
	stopped := find[*realtime.InputAudioBufferSpeechStopped](t, evs)
	require.Greater(t, stopped.AudioEndMs-started.AudioStartMs, 5000)
	sameSpeech(t, in[started.AudioStartMs*48:stopped.AudioEndMs*48], deltas(evs))

	long := cat(pcm(400, 0), pcm(7000, 8000), pcm(800, 0))
	feed(t, s, long, 960)
	evs = until(t, s, realtime.TypeResponseDone)
	stopped = find[*realtime.InputAudioBufferSpeechStopped](t, evs)
	require.Len(t, deltas(evs), (stopped.AudioEndMs-find[*realtime.InputAudioBufferSpeechStarted](t, evs).AudioStartMs)*48,
		"7 s of speech and its padding, all of it")
}
