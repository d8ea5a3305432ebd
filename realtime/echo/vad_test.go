package echo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zaf/g711"

	"switchboard/realtime"
)

func TestVADHangoverAndClicks(t *testing.T) {
	cfg := vadConfig{thresholdDBFS: thresholdDBFS(0.5), silenceMs: 500, prefixMs: 300, minSpeechMs: 30}
	f := pcmFmt()
	for _, tc := range []struct {
		name string
		in   []byte
		want []vadEvent // at in ms
	}{
		{"one turn", cat(pcm(500, 0), pcm(1000, 8000), pcm(600, 0)),
			[]vadEvent{{kind: vadStart, at: 200, onset: 500}, {kind: vadStop, at: 2000, speechEnd: 1500}}},
		{"a gap shorter than the silence duration keeps one turn", cat(pcm(500, 0), pcm(400, 8000), pcm(400, 0), pcm(400, 8000), pcm(600, 0)),
			[]vadEvent{{kind: vadStart, at: 200, onset: 500}, {kind: vadStop, at: 2200, speechEnd: 1700}}},
		{"a 20 ms click starts nothing", cat(pcm(500, 0), pcm(20, 8000), pcm(800, 0)), nil},
		{"quiet audio under the threshold", cat(pcm(500, 0), pcm(1000, 200), pcm(800, 0)), nil},
		{"speech at the very start is not padded before zero", cat(pcm(400, 8000), pcm(600, 0)),
			[]vadEvent{{kind: vadStart, at: 0, onset: 0}, {kind: vadStop, at: 900, speechEnd: 400}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVAD(cfg, 24000)
			var got []vadEvent
			for i := 0; i < len(tc.in); i += 960 {
				got = v.push(got, f.decode(nil, tc.in[i:min(i+960, len(tc.in))]))
			}
			for i := range got {
				got[i].at, got[i].onset, got[i].speechEnd = got[i].at/24, got[i].onset/24, got[i].speechEnd/24
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func BenchmarkVAD20ms(b *testing.B) {
	v := newVAD(vadConfig{thresholdDBFS: -40, silenceMs: 500, prefixMs: 300, minSpeechMs: 30}, 24000)
	frame := pcmFmt().decode(nil, pcm(20, 8000))
	var evs []vadEvent
	b.ReportAllocs()
	for b.Loop() {
		evs = v.push(evs[:0], frame)
	}
}

func BenchmarkDecodePCMUFrame(b *testing.B) {
	f := format{typ: "audio/pcmu", rate: 8000}
	in := make([]byte, 160)
	out := make([]int16, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		out = f.decode(out[:0], in)
	}
}

// BenchmarkLongTurnFrame is a frame of a caller who talks without a
// pause (µ-law 8 kHz in, the turn already past MaxTurn): what every frame
// of make bench-calls' continuous callers costs the engine. A copy of the
// whole turn per frame made it ~80 KB of memmove a frame.
func BenchmarkLongTurnFrame(b *testing.B) {
	e := New(Options{Synthesizer: fixedSynth{}})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s := &session{e: e, ctx: ctx, cancel: cancel, events: make(chan realtime.Event, 1<<10)}
	s.cfg = e.defaultConfig("sess_bench")
	s.applyFormats()
	s.apply(realtime.SessionConfig{Audio: &realtime.AudioConfig{Input: &realtime.AudioInput{Format: &realtime.AudioFormat{Type: realtime.FormatPCMU}}}})
	go func() {
		for range s.events {
		}
	}()
	defer close(s.events)
	frame := g711.EncodeUlaw(pcm(20, 8000))[:160] // a tone's code words
	for range int(DefaultMaxTurn/(20*time.Millisecond)) + 100 {
		s.onAudio(frame)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.onAudio(frame)
	}
}
