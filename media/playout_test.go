package media

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCodedPlayoutMatchesPCM drives a PCM queue and a coded queue with the
// same writes, reads and flushes: what the pacer sends, Len, and the item
// and milliseconds Flush reports for barge-in must not depend on the kind.
func TestCodedPlayoutMatchesPCM(t *testing.T) {
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			pcmQ, codedQ := NewPlayout(), NewCodedPlayout(c)
			items := []string{"a", "b", "c"}
			for step := range 2000 {
				switch op := rng.IntN(10); {
				case op < 4: // a model delta, as the consumer's code words
					id := items[rng.IntN(len(items))]
					payload := c.EncodeFrame(nil, tone(300+float64(rng.IntN(500)), 8000, 1+rng.IntN(400), 8000))
					pcmQ.WriteCoded(id, c, payload)
					codedQ.WriteCoded(id, c, payload)
				case op < 5: // a prompt rendered locally, as PCM
					id := items[rng.IntN(len(items))]
					pcm := tone(440, 8000, 1+rng.IntN(400), 8000)
					pcmQ.Write(id, pcm)
					codedQ.Write(id, pcm)
				case op < 9: // a pacer frame
					n := 80 * (1 + rng.IntN(3))
					a, sa := pcmQ.ReadCoded(nil, n, c)
					b, sb := codedQ.ReadCoded(nil, n, c)
					require.Equal(t, sa, sb, "step %d", step)
					require.Equal(t, a, b, "step %d", step)
				default: // barge-in
					ida, msa := pcmQ.Flush()
					idb, msb := codedQ.Flush()
					require.Equal(t, ida, idb, "step %d", step)
					require.Equal(t, msa, msb, "step %d", step)
				}
				require.Equal(t, pcmQ.Len(), codedQ.Len(), "step %d", step)
			}
		})
	}
}

// TestPlayoutConvertsOnce: each kind of write meets each kind of queue
// and comes out of the pacer's read as the wire codec's bytes; the coded
// queue passes its own codec's bytes through untouched.
func TestPlayoutConvertsOnce(t *testing.T) {
	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	pcm := tone(440, 8000, 256, 8000)
	coded := func(c Codec) func() *Playout { return func() *Playout { return NewCodedPlayout(c) } }
	tests := []struct {
		name  string
		queue func() *Playout
		write func(q *Playout)
		wire  Codec
		want  []byte
	}{
		{"coded PCMU, PCMU bytes, sent as PCMU: untouched", coded(PCMU),
			func(q *Playout) { q.WriteCoded("i", PCMU, codes) }, PCMU, codes},
		{"coded PCMA, PCMA bytes, sent as PCMA: untouched", coded(PCMA),
			func(q *Playout) { q.WriteCoded("i", PCMA, codes) }, PCMA, codes},
		{"coded PCMU, PCMU bytes, sent as PCMA: transcoded", coded(PCMU),
			func(q *Playout) { q.WriteCoded("i", PCMU, codes) }, PCMA, PCMA.Transcode(nil, PCMU, codes)},
		{"coded PCMU, PCMA bytes: transcoded on write", coded(PCMU),
			func(q *Playout) { q.WriteCoded("i", PCMA, codes) }, PCMU, PCMU.Transcode(nil, PCMA, codes)},
		{"coded PCMU, PCM prompt: encoded on write", coded(PCMU),
			func(q *Playout) { q.Write("i", pcm) }, PCMU, PCMU.EncodeFrame(nil, pcm)},
		{"PCM queue, PCMU bytes: decoded, encoded by the pacer", NewPlayout,
			func(q *Playout) { q.WriteCoded("i", PCMU, codes) }, PCMU, PCMU.EncodeFrame(nil, PCMU.DecodeFrame(nil, codes))},
		{"PCM queue, PCM: encoded by the pacer", NewPlayout,
			func(q *Playout) { q.Write("i", pcm) }, PCMA, PCMA.EncodeFrame(nil, pcm)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.queue()
			tt.write(q)
			got, speech := q.ReadCoded(nil, 256, tt.wire)
			require.True(t, speech)
			require.Equal(t, tt.want, got)
			// Short reads are padded with the wire codec's silence.
			got, speech = q.ReadCoded(nil, 160, tt.wire)
			require.False(t, speech)
			require.Equal(t, bytes.Repeat([]byte{tt.wire.SilenceByte()}, 160), got)
			// Barge-in: the item heard in full, its late writes dropped.
			id, ms := q.Flush()
			require.Equal(t, "i", id)
			require.Equal(t, 32, ms)
			tt.write(q)
			require.Zero(t, q.Len())
		})
	}
}

// TestCodedPlayoutReadDecodes: Read on a coded queue returns PCM, so a
// consumer of PCM frames works with either kind.
func TestCodedPlayoutReadDecodes(t *testing.T) {
	q := NewCodedPlayout(PCMA)
	codes := PCMA.EncodeFrame(nil, tone(440, 8000, 100, 8000))
	q.WriteCoded("i", PCMA, codes)
	got, speech := q.Read(nil, 160)
	require.True(t, speech)
	require.Equal(t, PCMA.DecodeFrame(nil, codes), got[:100])
	require.Equal(t, make([]int16, 60), got[100:])
	require.Equal(t, "Playout(PCMA)", q.String())
	require.Equal(t, "Playout", NewPlayout().String())
	c, coded := q.Coded()
	require.True(t, coded)
	require.Equal(t, PCMA, c)
}

func TestPlayoutWritesDoNotAllocate(t *testing.T) {
	q := NewCodedPlayout(PCMU)
	codes := make([]byte, 160)
	pcm := make([]int16, 160)
	out := make([]byte, 0, 320)
	allocs := testing.AllocsPerRun(200, func() {
		q.WriteCoded("i", PCMU, codes)
		q.Write("i", pcm)
		out, _ = q.ReadCoded(out[:0], 320, PCMA)
	})
	require.Zero(t, allocs)
}

// TestPlayoutGivesBackABurstsMemory: a burst (a greeting queued at once)
// grows the queue's array; once it has played out, or a barge-in flushed
// it, the next write starts a small array again, so a long call does not
// keep a greeting's memory.
func TestPlayoutGivesBackABurstsMemory(t *testing.T) {
	for _, end := range []string{"played", "flushed"} {
		t.Run(end, func(t *testing.T) {
			q := NewPlayout()
			require.Equal(t, queueStart, cap(q.pcm.buf))
			q.Write("greeting", make([]int16, 3*ClockRate))
			require.GreaterOrEqual(t, cap(q.pcm.buf), 3*ClockRate)
			if end == "played" {
				for q.Len() > 0 {
					q.Read(nil, 160)
				}
			} else {
				q.Flush()
			}
			require.Zero(t, cap(q.pcm.buf), "let go at once, not at the next write")
			q.Write("answer", make([]int16, 160))
			require.Equal(t, queueStart, cap(q.pcm.buf), "the burst's array was let go")
			out, ok := q.Read(nil, 160)
			require.True(t, ok)
			require.Len(t, out, 160)
		})
	}
}

// TestPlayoutTrimKeepsTheLatest: Trim drops the oldest audio beyond its
// bound, so the pacer next sends the latest audio, and reports what it
// dropped; within the bound it drops nothing.
func TestPlayoutTrimKeepsTheLatest(t *testing.T) {
	for _, q := range []*Playout{NewCodedPlayout(PCMU), NewPlayout()} {
		t.Run(q.String(), func(t *testing.T) {
			old := bytes.Repeat([]byte{0x11}, 8000) // 1 s
			latest := bytes.Repeat([]byte{0x22}, 800)
			q.WriteCoded("a", PCMU, old)
			q.WriteCoded("b", PCMU, latest)
			require.Zero(t, q.Trim(2*time.Second))
			require.Equal(t, 1100*time.Millisecond, q.Len())
			require.Equal(t, time.Second, q.Trim(100*time.Millisecond))
			require.Equal(t, 100*time.Millisecond, q.Len())
			got, ok := q.ReadCoded(nil, 800, PCMU)
			require.True(t, ok)
			require.Equal(t, latest, got)
			require.Zero(t, q.Len())
			require.Zero(t, q.Trim(0))
		})
	}
}
