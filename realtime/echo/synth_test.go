package echo

import (
	"context"
	"encoding/binary"
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
	s, err := espeak(t).Synthesize(context.Background(), "Welcome to switchboard.", 24000)
	require.NoError(t, err)
	require.Greater(t, len(s), 24000/2, "at least half a second of speech")
	require.Less(t, len(s), 24000*5)
	require.Greater(t, frameDBFS(s), -40.0, "audible")
	require.IsType(t, Espeak{}, DefaultSynthesizer())
}

func TestEspeakFailureIsReported(t *testing.T) {
	_, err := Espeak{Path: "/nonexistent/espeak-ng"}.Synthesize(context.Background(), "x", 24000)
	require.Error(t, err)
}

func TestToneFallback(t *testing.T) {
	s, err := Tone{}.Synthesize(context.Background(), "hello", 8000)
	require.NoError(t, err)
	require.Equal(t, 350*8, len(s))
	require.Greater(t, frameDBFS(s), -30.0)
}

func wav(rate, channels int, samples []int16, streaming bool) []byte {
	data := make([]byte, 0, 2*len(samples))
	for _, v := range samples {
		data = binary.LittleEndian.AppendUint16(data, uint16(v))
	}
	size := uint32(len(data))
	if streaming {
		size = 0xFFFFFFFF
	}
	b := []byte("RIFF\xff\xff\xff\xffWAVEfmt ")
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(channels))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*2*channels))
	b = binary.LittleEndian.AppendUint16(b, uint16(2*channels))
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "LIST"...)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = append(b, "abc\x00"...) // odd chunk, padded
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, size)
	return append(b, data...)
}

func TestParseWAV(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"mono", wav(22050, 1, []int16{1, -2, 3}, false), true},
		{"streaming size", wav(22050, 1, []int16{1, -2, 3}, true), true},
		{"stereo keeps the first channel", wav(22050, 2, []int16{1, 9, -2, 9, 3, 9}, false), true},
		{"not riff", []byte("hello world, not a wav"), false},
		{"truncated", wav(22050, 1, nil, false)[:20], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rate, err := parseWAV(tc.in)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 22050, rate)
			require.Equal(t, []int16{1, -2, 3}, s)
		})
	}
}

func FuzzParseWAV(f *testing.F) {
	f.Add(wav(22050, 1, []int16{1, 2, 3}, true))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVE"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rate, err := parseWAV(b)
		if err == nil && (rate <= 0 || len(s) > len(b)) {
			t.Fatalf("rate %d, %d samples from %d bytes", rate, len(s), len(b))
		}
	})
}

func TestResample(t *testing.T) {
	in := make([]int16, 22050)
	for i := range in {
		in[i] = int16(i % 100)
	}
	out := resample(in, 22050, 24000)
	require.Len(t, out, 24000)
	require.Len(t, resample(out, 24000, 8000), 8000)
	require.Equal(t, in, resample(in, 22050, 22050))
}

// TestEchoRepeatsEspeakSpeech feeds real synthetic speech through the VAD: one
// turn, and the echo returns exactly the committed audio.
func TestEchoRepeatsEspeakSpeech(t *testing.T) {
	speech, err := espeak(t).Synthesize(context.Background(), "Hello, I would like to check my order status please.", 24000)
	require.NoError(t, err)
	pcmFmt := format{typ: realtime.FormatPCM, rate: 24000}
	in := cat(pcm(400, 0), pcmFmt.encode(nil, speech), pcm(1200, 0))
	s := open(t, Options{Unpaced: true, Synthesizer: Tone{}}, realtime.SessionConfig{})
	feed(t, s, in, 960)
	evs := until(t, s, realtime.TypeResponseDone)
	started := find[*realtime.InputAudioBufferSpeechStarted](t, evs)
	stopped := find[*realtime.InputAudioBufferSpeechStopped](t, evs)
	require.InDelta(t, 100, started.AudioStartMs, 60, "speech starts at 400 ms, minus the 300 ms prefix")
	eqBytes(t, in[started.AudioStartMs*48:stopped.AudioEndMs*48], deltas(evs))
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
