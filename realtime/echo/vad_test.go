package echo

import (
	"testing"

	"github.com/stretchr/testify/require"
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
