package media

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mixed collects what a mixer hands its sink.
type mixed struct {
	frames [][]int16
}

func (m *mixed) sink(pcm []int16) { m.frames = append(m.frames, append([]int16(nil), pcm...)) }

func (m *mixed) all() []int16 {
	var out []int16
	for _, f := range m.frames {
		out = append(out, f...)
	}
	return out
}

func pcmFrame(pcm []int16) Frame { return Frame{Samples: len(pcm), PCM: pcm} }

// TestMixerSumsBothDirections: each 20 ms of the caller's voice and of
// what the caller hears come out as one frame, their sum, whatever form
// the tap got them in (PCM, G.711 code words of either law, nothing sent
// while held, a telephone-event in the audio's slot).
func TestMixerSumsBothDirections(t *testing.T) {
	voice := tone(1000, 8000, 160, 6000)
	heard := tone(440, 8000, 160, 6000)
	want := make([]int16, 160)
	for i := range want {
		want[i] = voice[i] + heard[i]
	}
	law := func(c Codec, pcm []int16) []int16 { return c.DecodeFrame(nil, c.EncodeFrame(nil, pcm)) }
	for _, tc := range []struct {
		name    string
		in, out Frame
		want    []int16
	}{
		{"pcm", pcmFrame(voice), pcmFrame(heard), want},
		{"pcmu words", Frame{Samples: 160, Coded: PCMU.EncodeFrame(nil, voice), Codec: PCMU},
			Frame{Samples: 160, Coded: PCMU.EncodeFrame(nil, heard), Codec: PCMU}, sum(law(PCMU, voice), law(PCMU, heard))},
		{"pcma and pcm", Frame{Samples: 160, Coded: PCMA.EncodeFrame(nil, voice), Codec: PCMA}, pcmFrame(heard), sum(law(PCMA, voice), heard)},
		{"held", pcmFrame(voice), Frame{Samples: 160}, voice},
		{"event", pcmFrame(voice), Frame{Samples: 160, Coded: []byte{1, 0x8a, 0, 0xa0}, Codec: PCMU, Event: true}, voice},
		{"g722 words", Frame{Samples: 160, Coded: make([]byte, 160), Codec: G722}, pcmFrame(heard), heard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got mixed
			m := NewMixer(got.sink)
			m.Inbound(tc.in)
			require.Empty(t, got.frames, "one direction alone waits for the other")
			m.Outbound(tc.out)
			require.Len(t, got.frames, 1)
			require.Equal(t, tc.want, got.frames[0])
		})
	}
}

func sum(a, b []int16) []int16 {
	out := make([]int16, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// TestMixerSaturates: two loud directions clip at full scale instead of
// wrapping around.
func TestMixerSaturates(t *testing.T) {
	var got mixed
	m := NewMixer(got.sink)
	hi, lo := make([]int16, 160), make([]int16, 160)
	for i := range hi {
		hi[i], lo[i] = 30000, -30000
	}
	m.Inbound(pcmFrame(hi))
	m.Outbound(pcmFrame(hi))
	m.Inbound(pcmFrame(lo))
	m.Outbound(pcmFrame(lo))
	require.Len(t, got.frames, 2)
	require.Equal(t, int16(32767), got.frames[0][0])
	require.Equal(t, int16(-32768), got.frames[1][0])
}

// TestMixerOneDirectionAlone: when one direction stops (the pacer held,
// the caller's phone on hold), the other is heard alone after three
// frames, and a direction that runs ahead never queues more than 100 ms:
// the mix does not drift behind.
func TestMixerOneDirectionAlone(t *testing.T) {
	var got mixed
	m := NewMixer(got.sink)
	voice := tone(1000, 8000, 8000, 6000)
	for i := 0; i < 2; i++ {
		m.Inbound(pcmFrame(voice[i*160 : (i+1)*160]))
	}
	require.Empty(t, got.frames, "two frames wait for the other direction")
	m.Inbound(pcmFrame(voice[320:480]))
	require.Len(t, got.frames, 1, "the third frame goes out alone")
	require.Equal(t, voice[:160], got.frames[0])
	for i := 3; i < 50; i++ {
		m.Inbound(pcmFrame(voice[i*160 : (i+1)*160]))
	}
	require.Len(t, got.frames, 48, "one frame out for each frame in, three behind")
	require.Equal(t, voice[:48*160], got.all())

	// The other direction comes back: the two pair up again, and what
	// the first had queued alone is mixed with it.
	heard := tone(440, 8000, 160, 6000)
	m.Outbound(pcmFrame(heard))
	require.Len(t, got.frames, 49)
	require.Equal(t, sum(voice[48*160:49*160], heard), got.frames[48])

	// A burst bigger than the queue keeps only its last 100 ms.
	var burst mixed
	b := NewMixer(burst.sink)
	long := tone(700, 8000, 2000, 6000)
	b.Outbound(pcmFrame(long))
	require.Len(t, burst.frames, 3, "100 ms kept, 60 ms (mixLag) of it mixed alone at once")
	require.Equal(t, long[2000-800:2000-320], burst.all())
}

// TestMixerOtherPtimes: 10 and 30 ms frames come out as 20 ms frames,
// every sample once, in order.
func TestMixerOtherPtimes(t *testing.T) {
	var got mixed
	m := NewMixer(got.sink)
	voice := tone(1000, 8000, 2400, 6000)
	heard := tone(440, 8000, 2400, 6000)
	for i := 0; i < 30; i++ { // 10 ms in, 30 ms out
		m.Inbound(pcmFrame(voice[i*80 : (i+1)*80]))
		if i%3 == 2 {
			j := i / 3
			m.Outbound(pcmFrame(heard[j*240 : (j+1)*240]))
		}
	}
	all := got.all()
	require.GreaterOrEqual(t, len(all), 2400-160)
	require.Equal(t, sum(voice[:len(all)], heard[:len(all)]), all)
	for _, f := range got.frames {
		require.Len(t, f, 160)
	}
}

// TestMixerNoAllocation: a frame each way, PCM or code words, allocates
// nothing.
func TestMixerNoAllocation(t *testing.T) {
	m := NewMixer(func([]int16) {})
	pcm := tone(1000, 8000, 160, 6000)
	coded := Frame{At: time.Now(), Samples: 160, Coded: PCMU.EncodeFrame(nil, pcm), Codec: PCMU}
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		m.Inbound(pcmFrame(pcm))
		m.Outbound(coded)
	}))
}

func BenchmarkFrameMixer(b *testing.B) {
	var out int
	m := NewMixer(func(p []int16) { out += len(p) })
	pcm := tone(1000, 8000, 160, 6000)
	coded := Frame{Samples: 160, Coded: PCMU.EncodeFrame(nil, tone(440, 8000, 160, 6000)), Codec: PCMU}
	in := pcmFrame(pcm)
	b.ReportAllocs()
	for b.Loop() {
		m.Inbound(in)
		m.Outbound(coded)
	}
}
