package call

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/media"
)

// voice and quiet are 20 ms frames above and below the voice level.
func testFrames() (voice, quiet []int16) {
	voice, quiet = make([]int16, 160), make([]int16, 160)
	for i := range voice {
		voice[i] = 3000
		if i%2 == 1 {
			voice[i] = -3000
		}
	}
	return voice, quiet
}

func TestHealthTurnLatencyAndFirstAudio(t *testing.T) {
	h := newHealth(HealthOptions{}, NewMetrics(nil))
	voice, quiet := testFrames()
	coded := media.PCMU.EncodeFrame(nil, voice)
	silent := media.PCMU.EncodeFrame(nil, quiet)
	t0 := time.Unix(1000, 0)
	h.answer(t0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// The greeting starts 60 ms after the answer.
	for ms := 0; ms < 1000; ms += 20 {
		out := media.Frame{At: at(ms), Samples: 160, Coded: silent, Codec: media.PCMU}
		if ms >= 60 && ms < 600 {
			out.Coded, out.Speech = coded, true
		}
		h.Outbound(out)
		h.Inbound(media.Frame{At: at(ms), Samples: 160, PCM: quiet, Status: media.FramePlayed})
	}
	// The caller speaks 1.0–2.0 s; the reply starts at 2.7 s.
	for ms := 1000; ms < 4000; ms += 20 {
		in := quiet
		if ms < 2000 {
			in = voice
		}
		h.Inbound(media.Frame{At: at(ms), Samples: 160, PCM: in, Status: media.FramePlayed})
		out := media.Frame{At: at(ms), Samples: 160, Coded: silent, Codec: media.PCMU}
		if ms >= 2700 && ms < 3200 {
			out.Coded, out.Speech = coded, true
		}
		h.Outbound(out)
	}
	m := newMonitor(h, func() media.StatsSnapshot { return media.StatsSnapshot{} }, nil)
	m.now = func() time.Time { return at(4000) }
	m.tick()
	mh := m.health()
	require.Equal(t, int64(60), mh.FirstAudioMS)
	require.Equal(t, 1, mh.TurnLatency.Count)
	require.Equal(t, int64(700), mh.TurnLatency.P50MS)
	require.Equal(t, int64(700), mh.TurnLatency.MaxMS)
	require.Empty(t, mh.Degraded)
	require.InDelta(t, 3000, mh.CallerSilenceMS, 40) // 4 s minus 1 s of speech
}

func TestHealthOneWayAndLoss(t *testing.T) {
	var degraded []string
	h := newHealth(HealthOptions{}, NewMetrics(nil))
	voice, _ := testFrames()
	coded := media.PCMU.EncodeFrame(nil, voice)
	t0 := time.Unix(1000, 0)
	h.answer(t0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	st := media.StatsSnapshot{}
	m := newMonitor(h, func() media.StatsSnapshot { return st }, func(r string, _ MediaHealth) { degraded = append(degraded, r) })
	// The caller's RTP flows for 2 s with 10% loss, then stops; the agent
	// keeps talking.
	for ms := 0; ms < 8000; ms += 20 {
		if ms < 2000 {
			h.Inbound(media.Frame{At: at(ms), Samples: 160, PCM: voice, Status: media.FramePlayed})
		}
		h.Outbound(media.Frame{At: at(ms), Samples: 160, Coded: coded, Codec: media.PCMU, Speech: true})
		if ms%1000 == 0 {
			if ms <= 2000 {
				st.Expected, st.Lost = uint64(ms/20), int64(ms/200)
			}
			m.now = func() time.Time { return at(ms) }
			m.tick()
		}
	}
	mh := m.health()
	require.Equal(t, OneWayNoCallerAudio, mh.OneWay)
	require.True(t, mh.OneWaySeen)
	require.Contains(t, mh.Degraded, DegradedNoAudio)
	require.Contains(t, mh.Degraded, DegradedOneWay)
	require.Contains(t, degraded, DegradedLoss)
	require.Contains(t, mh.DegradedSeen, DegradedLoss)
	require.InDelta(t, 0.1, mh.LossRatio, 0.001)
}

// BenchmarkHealthTap is the per-frame cost of the call's taps on the media
// goroutine, a supervisor's mixer included: it must not allocate.
func BenchmarkHealthTap(b *testing.B) {
	h := newHealth(HealthOptions{}, NewMetrics(nil))
	voice, _ := testFrames()
	coded := media.PCMU.EncodeFrame(nil, voice)
	t0 := time.Now()
	h.answer(t0)
	var rec atomicRec
	var mix atomic.Pointer[mixSet]
	mixed := 0
	mix.Store(&mixSet{ms: []*media.Mixer{media.NewMixer(func(pcm []int16) { mixed += len(pcm) })}})
	tap := callTap{h: h, rec: &rec.p, mix: &mix}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		tap.Inbound(media.Frame{At: at, Samples: 160, PCM: voice, Status: media.FramePlayed})
		tap.Outbound(media.Frame{At: at, Samples: 160, Coded: coded, Codec: media.PCMU, Speech: i%50 < 25})
	}
}

func TestHealthTapDoesNotAllocate(t *testing.T) {
	res := testing.Benchmark(BenchmarkHealthTap)
	require.Zero(t, res.AllocsPerOp(), "the taps allocate on the media goroutine")
}

type atomicRec struct{ p atomic.Pointer[recBox] }

// TestHealthOneWaySilence: a caller whose RTP carries only digital
// silence while the agent talks on is one-way; one who listens quietly
// (line noise) is not, nor is one silent through a short reply.
func TestHealthOneWaySilence(t *testing.T) {
	voice, zero := testFrames()
	noise := make([]int16, 160)
	for i := range noise {
		noise[i] = int16(6 - 12*(i%2))
	}
	coded := media.PCMU.EncodeFrame(nil, voice)
	silentOut := media.PCMU.EncodeFrame(nil, zero)
	for _, tc := range []struct {
		name    string
		in      []int16
		talkFor int // ms of each second the agent talks
		oneWay  bool
	}{
		{"digital silence, agent talks", zero, 1000, true},
		{"line noise, agent talks", noise, 1000, false},
		{"digital silence, short reply", zero, 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHealth(HealthOptions{}, NewMetrics(nil))
			t0 := time.Unix(1000, 0)
			h.answer(t0)
			m := newMonitor(h, func() media.StatsSnapshot { return media.StatsSnapshot{} }, nil)
			for ms := 0; ms <= 8000; ms += 20 {
				at := t0.Add(time.Duration(ms) * time.Millisecond)
				h.Inbound(media.Frame{At: at, Samples: 160, PCM: tc.in, Status: media.FramePlayed})
				out := media.Frame{At: at, Samples: 160, Coded: silentOut, Codec: media.PCMU}
				if ms%1000 < tc.talkFor {
					out.Coded, out.Speech = coded, true
				}
				h.Outbound(out)
				if ms%1000 == 0 {
					m.now = func() time.Time { return at }
					m.tick()
				}
			}
			require.Equal(t, tc.oneWay, m.health().OneWaySeen)
		})
	}
}

// TestHealthPeerHold: a caller's side holding the call sends nothing;
// that is not one-way audio nor missing audio.
func TestHealthPeerHold(t *testing.T) {
	voice, _ := testFrames()
	coded := media.PCMU.EncodeFrame(nil, voice)
	h := newHealth(HealthOptions{}, NewMetrics(nil))
	t0 := time.Now()
	h.answer(t0)
	h.peerHold(true)
	m := newMonitor(h, func() media.StatsSnapshot { return media.StatsSnapshot{} }, nil)
	for s := 1; s <= 8; s++ {
		at := t0.Add(time.Duration(s) * time.Second)
		h.Outbound(media.Frame{At: at, Samples: 160, Coded: coded, Codec: media.PCMU, Speech: true})
		m.now = func() time.Time { return at }
		m.tick()
	}
	mh := m.health()
	require.Empty(t, mh.DegradedSeen)
	require.False(t, mh.OneWaySeen)
}

// TestHealthFirstAudioAtTheAnswer: a first frame whose pacer slot lies
// just before the answer (the scheduler runs a little ahead of the
// clock) counts as audio at the answer, not before it
// (TestStreamBotUnreachable saw first_audio_ms -41 once).
func TestHealthFirstAudioAtTheAnswer(t *testing.T) {
	h := newHealth(HealthOptions{}, NewMetrics(nil))
	voice, _ := testFrames()
	t0 := time.Unix(1000, 0)
	h.answer(t0)
	h.Outbound(media.Frame{At: t0.Add(-40 * time.Millisecond), Samples: 160, Coded: media.PCMU.EncodeFrame(nil, voice), Codec: media.PCMU, Speech: true})
	m := newMonitor(h, func() media.StatsSnapshot { return media.StatsSnapshot{} }, nil)
	m.now = func() time.Time { return t0.Add(time.Second) }
	m.tick()
	require.Equal(t, int64(0), m.health().FirstAudioMS)
}
