package media

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// twinBuffers are a PCM and a coded jitter buffer fed the same packets.
type twinBuffers struct {
	pcm   *JitterBuffer
	coded *CodedJitterBuffer
}

func newTwins(t testing.TB, c Codec) *twinBuffers {
	t.Helper()
	opts := JitterOptions{Ptime: 20 * time.Millisecond, Delay: 40 * time.Millisecond}
	pcm, err := NewJitterBuffer(opts)
	require.NoError(t, err)
	coded, err := NewCodedJitterBuffer(c, opts)
	require.NoError(t, err)
	return &twinBuffers{pcm: pcm, coded: coded}
}

// push feeds both and requires the same verdict.
func (w *twinBuffers) push(t testing.TB, h *rtp.Header, payload []byte) PushResult {
	t.Helper()
	a, b := w.pcm.Push(h, payload), w.coded.Push(h, payload)
	require.Equal(t, a, b, "push seq %d ts %d", h.SequenceNumber, h.Timestamp)
	return a
}

// pop pops both and requires the same status and the same audio: the coded
// frame is the PCM frame's code words (a concealed sample is the code word
// of the PCM buffer's attenuated sample; mu-law's second zero, 0x7F,
// re-encodes as 0xFF).
func (w *twinBuffers) pop(t testing.TB) ([]byte, FrameStatus) {
	t.Helper()
	p, sp := w.pcm.Pop(nil)
	c, sc := w.coded.Pop(nil)
	require.Equal(t, sp, sc)
	require.Len(t, c, len(p))
	codec := w.coded.Codec()
	for i := range p {
		dec := codec.DecodeFrame(nil, c[i:i+1])[0]
		enc := codec.EncodeFrame(nil, p[i:i+1])[0]
		if dec != p[i] && enc != c[i] {
			t.Fatalf("%v frame, sample %d: coded 0x%02x (%d), pcm %d", sp, i, c[i], dec, p[i])
		}
	}
	require.Equal(t, w.pcm.Buffered(), w.coded.Buffered())
	require.Equal(t, w.pcm.Dropped(), w.coded.Dropped())
	return c, sc
}

// TestCodedJitterBufferMatchesPCM: reordering, duplicates, late packets,
// loss, SSRC changes, timestamp jumps, bursts and odd packetisation give
// the coded buffer the same verdicts, statuses and audio as the PCM
// buffer, so the stats of a passthrough call read like any other.
func TestCodedJitterBufferMatchesPCM(t *testing.T) {
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			w := newTwins(t, c)
			seen := map[PushResult]int{}
			sts := map[FrameStatus]int{}
			ssrc, ts, seq := uint32(1), uint32(5000), uint16(0)
			for range 3000 {
				switch op := rng.IntN(20); {
				case op == 0: // a new stream
					ssrc, ts = ssrc+1, rng.Uint32()
				case op == 1: // a timestamp jump
					ts += uint32(rng.IntN(100000))
				case op < 12: // a packet, maybe reordered, duplicated, late or lost
					n := []int{80, 160, 160, 160, 240}[rng.IntN(5)]
					pts := ts + uint32(rng.IntN(5)-2)*160
					payload := make([]byte, n)
					for i := range payload {
						payload[i] = byte(rng.UintN(256))
					}
					if rng.IntN(10) > 0 { // 10% lost
						seen[w.push(t, &rtp.Header{PayloadType: c.PayloadType, SequenceNumber: seq, Timestamp: pts, SSRC: ssrc}, payload)]++
					}
					seq++
					ts += uint32(n)
				default:
					_, st := w.pop(t)
					sts[st]++
				}
			}
			for _, r := range []PushResult{PushAccepted, PushDuplicate, PushLate, PushSSRCChange, PushResync} {
				require.Positive(t, seen[r], "the walk covers %v", r)
			}
			for _, st := range []FrameStatus{FramePlayed, FrameConcealed, FrameSilence} {
				require.Positive(t, sts[st], "the walk covers %v", st)
			}
		})
	}
}

// TestCodedJitterBuffer: the frames hold the packets' bytes untouched;
// loss is concealed by attenuated repeats of the last frame's code words,
// then the codec's silence byte.
func TestCodedJitterBuffer(t *testing.T) {
	frame := func(seed byte) []byte {
		b := make([]byte, 160)
		for i := range b {
			b[i] = seed + byte(i)
		}
		return b
	}
	for _, c := range []Codec{PCMU, PCMA} {
		t.Run(c.Name, func(t *testing.T) {
			j, err := NewCodedJitterBuffer(c, JitterOptions{Ptime: 20 * time.Millisecond, Delay: 40 * time.Millisecond})
			require.NoError(t, err)
			require.Equal(t, "Jitter(40ms "+c.Name+")", j.String())
			out, st := j.Pop(nil)
			require.Equal(t, FrameIdle, st)
			require.Equal(t, bytesOf(c.SilenceByte(), 160), out)

			push := func(seq uint16, payload []byte) PushResult {
				return j.Push(&rtp.Header{PayloadType: c.PayloadType, SequenceNumber: seq, Timestamp: 1000 + uint32(seq)*160, SSRC: 7}, payload)
			}
			type frameWant struct {
				st    FrameStatus
				bytes []byte
			}
			pops := func(want []frameWant) {
				t.Helper()
				for i, w := range want {
					out, st = j.Pop(out[:0])
					require.Equal(t, w.st, st, "frame %d", i)
					require.Equal(t, w.bytes, out, "frame %d", i)
				}
			}
			// Frames 0, 2, 1 (reordered), 1 again (duplicate) ...
			require.Equal(t, PushAccepted, push(0, frame(0)))
			require.Equal(t, PushAccepted, push(2, frame(2)))
			require.Equal(t, PushAccepted, push(1, frame(1)))
			require.Equal(t, PushDuplicate, push(1, frame(1)))
			pops([]frameWant{
				{FrameSilence, bytesOf(c.SilenceByte(), 160)}, // the initial delay
				{FrameSilence, bytesOf(c.SilenceByte(), 160)},
				{FramePlayed, frame(0)},
				{FramePlayed, frame(1)},
				{FramePlayed, frame(2)},
			})
			// ... then 3..6 lost and 1 too late.
			require.Equal(t, PushAccepted, push(7, frame(7)))
			require.Equal(t, PushLate, push(1, frame(1)))
			pops([]frameWant{
				{FrameConcealed, attenuated(c, frame(2), 0.7)},
				{FrameConcealed, attenuated(c, frame(2), 0.4)},
				{FrameConcealed, attenuated(c, frame(2), 0.15)},
				{FrameSilence, bytesOf(c.SilenceByte(), 160)},
				{FramePlayed, frame(7)},
			})
		})
	}
}

// TestCodedJitterBufferTranscodesOtherLaw: after a re-INVITE the peer may
// send the other G.711; the consumer keeps getting its own codec.
func TestCodedJitterBufferTranscodesOtherLaw(t *testing.T) {
	j, err := NewCodedJitterBuffer(PCMU, JitterOptions{Delay: 20 * time.Millisecond})
	require.NoError(t, err)
	alaw := make([]byte, 160)
	for i := range alaw {
		alaw[i] = byte(i * 3)
	}
	require.Equal(t, PushAccepted, j.Push(&rtp.Header{PayloadType: PayloadTypePCMA, Timestamp: 160, SSRC: 1}, alaw))
	require.Equal(t, PushAccepted, j.Push(&rtp.Header{PayloadType: PayloadTypePCMU, SequenceNumber: 1, Timestamp: 320, SSRC: 1}, alaw))
	j.Pop(nil)
	out, st := j.Pop(nil)
	require.Equal(t, FramePlayed, st)
	require.Equal(t, PCMU.Transcode(nil, PCMA, alaw), out)
	out, st = j.Pop(nil)
	require.Equal(t, FramePlayed, st)
	require.Equal(t, alaw, out, "its own law untouched")
}

func TestCodedJitterBufferRejects(t *testing.T) {
	_, err := NewCodedJitterBuffer(Codec{}, JitterOptions{})
	require.ErrorIs(t, err, errUnknownCodec)
	_, err = NewCodedJitterBuffer(PCMU, JitterOptions{Ptime: 70 * time.Millisecond})
	require.ErrorIs(t, err, errBadPtime)
	j, err := NewCodedJitterBuffer(PCMA, JitterOptions{})
	require.NoError(t, err)
	require.Equal(t, PushUnsupported, j.Push(&rtp.Header{PayloadType: 101}, []byte{1, 2, 3, 4}))
	require.Equal(t, PushUnsupported, j.Push(&rtp.Header{PayloadType: 8}, nil))
	require.Equal(t, PCMA, j.Codec())
}

func TestCodedJitterBufferNoAllocPerFrame(t *testing.T) {
	j, err := NewCodedJitterBuffer(PCMU, JitterOptions{})
	require.NoError(t, err)
	var seq uint16
	buf := make([]byte, 0, 160)
	allocs := testing.AllocsPerRun(200, func() {
		h, pl := benchPkt(seq)
		if seq%3 == 0 {
			h.PayloadType = PayloadTypePCMA // transcoded
		}
		if seq%7 != 0 { // and some loss, concealed
			j.Push(h, pl)
		}
		buf, _ = j.Pop(buf[:0])
		seq++
	})
	require.Zero(t, allocs)
}

// FuzzCodedJitterPush feeds the same hostile packets to both buffers: they
// must agree and neither may break its frame size or delay bound.
func FuzzCodedJitterPush(f *testing.F) {
	h, pl := pkt(1, 0, 0, 100)
	raw, _ := (&rtp.Packet{Header: *h, Payload: pl}).Marshal()
	f.Add(raw, raw)
	f.Add([]byte{0x80, 0x00, 0, 1, 0xff, 0xff, 0xff, 0x00, 0, 0, 0, 1, 0x7f}, []byte{0x80})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		w := newTwins(t, PCMU)
		for _, raw := range [][]byte{a, b, a} {
			var p rtp.Packet
			if p.Unmarshal(raw) != nil {
				continue
			}
			if p.PayloadType == PayloadTypePCMA {
				p.PayloadType = PayloadTypePCMU // the buffers decode the other law differently
			}
			w.push(t, &p.Header, p.Payload)
			out, _ := w.pop(t)
			require.Len(t, out, 160)
		}
		require.LessOrEqual(t, w.coded.Buffered(), 2100*time.Millisecond)
	})
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	fill(out, b)
	return out
}

// attenuated is frame scaled by g the way the PCM buffer conceals, in c.
func attenuated(c Codec, frame []byte, g float32) []byte {
	pcm := c.DecodeFrame(nil, frame)
	for i := range pcm {
		pcm[i] = int16(float32(pcm[i]) * g)
	}
	return c.EncodeFrame(nil, pcm)
}
