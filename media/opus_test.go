package media

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"

	"switchboard/media/opus"
)

var opusPT = OpusCodec(111)

// opusFrames encodes n 20 ms frames of a sweep at 24 kHz (speech-like
// enough that libopus codes it with SILK, as it codes voice), with the
// SIP leg's settings: 32 kbit/s, complexity 5.
func opusFrames(t testing.TB, n int) [][]byte {
	t.Helper()
	enc, err := opus.NewEncoder(24000, 32000)
	require.NoError(t, err)
	defer enc.Close()
	require.NoError(t, enc.SetComplexity(5))
	pcm := sweep(480 * n)
	out := make([][]byte, n)
	for i := range out {
		out[i], err = enc.Encode(nil, pcm[480*i:480*(i+1)])
		require.NoError(t, err)
	}
	return out
}

// sweep is n samples at 24 kHz of a tone gliding up from 300 Hz.
func sweep(n int) []int16 {
	pcm := make([]int16, n)
	for i := range pcm {
		x := float64(i%24000) / 24000
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*(300*x+400*x*x)))
	}
	return pcm
}

// TestOpusPacketSamples checks the table-of-contents reading against
// libopus on every configuration and frame count code.
func TestOpusPacketSamples(t *testing.T) {
	for toc := 0; toc < 256; toc++ {
		for _, count := range []byte{0, 1, 2, 3, 6, 48, 49, 63} {
			p := []byte{byte(toc), count, 0, 0, 0, 0}
			got, ok := OpusPacketSamples(p)
			want, err := opus.PacketSamples(p)
			if err != nil || want == 0 || want > 5760 {
				require.False(t, ok, "toc %#x count %d: libopus refuses", toc, count)
				continue
			}
			require.True(t, ok, "toc %#x count %d", toc, count)
			require.Equal(t, want, got, "toc %#x count %d", toc, count)
		}
	}
	_, ok := OpusPacketSamples(nil)
	require.False(t, ok)
	_, ok = OpusPacketSamples([]byte{3}) // code 3 without its count byte
	require.False(t, ok)
	for _, p := range opusFrames(t, 3) {
		n, ok := OpusPacketSamples(p)
		require.True(t, ok)
		require.Equal(t, 960, n, "20 ms at 48 kHz")
	}
}

func FuzzOpusPacketSamples(f *testing.F) {
	f.Add([]byte{0x78, 0x01})
	f.Add([]byte{0xfb, 0x30})
	f.Fuzz(func(t *testing.T, p []byte) {
		n, ok := OpusPacketSamples(p)
		if ok && (n < 120 || n > opusMaxSamples || n%120 != 0) {
			t.Fatalf("%d samples", n)
		}
	})
}

func opusHdr(seq uint16) *rtp.Header {
	return &rtp.Header{PayloadType: opusPT.PayloadType, SSRC: 5, SequenceNumber: seq, Timestamp: 1000 + 960*uint32(seq)}
}

type popped struct {
	st  FrameStatus
	fec bool
	dur int
	seq int // index of the payload in the frames, -1 for none
}

func popPackets(j *PacketJitterBuffer, frames [][]byte, n int) []popped {
	var out []popped
	for range n {
		p, fec, dur, st := j.Pop(nil)
		idx := -1
		for i, f := range frames {
			if len(p) > 0 && string(f) == string(p) {
				idx = i
			}
		}
		out = append(out, popped{st, fec, dur, idx})
	}
	return out
}

func TestPacketJitterBuffer(t *testing.T) {
	frames := opusFrames(t, 12)
	t.Run("in order after the delay", func(t *testing.T) {
		j, err := NewPacketJitterBuffer(opusPT, JitterOptions{})
		require.NoError(t, err)
		require.Equal(t, "Jitter(40ms opus)", j.String())
		_, _, _, st := j.Pop(nil)
		require.Equal(t, FrameIdle, st)
		require.Equal(t, PushAccepted, j.Push(opusHdr(0), frames[0]))
		require.Equal(t, []popped{{FrameSilence, false, 960, -1}}, popPackets(j, frames, 1), "one packet is less than the delay")
		require.Equal(t, PushAccepted, j.Push(opusHdr(1), frames[1]))
		require.Equal(t, 40*time.Millisecond, j.Buffered())
		require.Equal(t, []popped{{FramePlayed, false, 960, 0}, {FramePlayed, false, 960, 1}}, popPackets(j, frames, 2))
		require.Equal(t, PushLate, j.Push(opusHdr(1), frames[1]))
	})
	t.Run("reordered, duplicated, lost", func(t *testing.T) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		for _, seq := range []uint16{0, 2, 1, 4, 6, 7} {
			require.Equal(t, PushAccepted, j.Push(opusHdr(seq), frames[seq]), "seq %d", seq)
		}
		require.Equal(t, PushDuplicate, j.Push(opusHdr(2), frames[2]))
		require.Equal(t, []popped{
			{FramePlayed, false, 960, 0}, {FramePlayed, false, 960, 1}, {FramePlayed, false, 960, 2},
			{FrameConcealed, true, 960, 4}, // 3 lost: 4 carries its FEC data
			{FramePlayed, false, 960, 4},
			{FrameConcealed, true, 960, 6}, // 5 lost
			{FramePlayed, false, 960, 6}, {FramePlayed, false, 960, 7},
		}, popPackets(j, frames, 8))
		// Two lost in a row: the first is concealed by PLC, the second
		// from the FEC data of the packet after it.
		j.Push(opusHdr(10), frames[10])
		j.Push(opusHdr(11), frames[11])
		require.Equal(t, []popped{
			{FrameConcealed, false, 960, -1}, {FrameConcealed, true, 960, 10}, {FramePlayed, false, 960, 10},
		}, popPackets(j, frames, 3))
	})
	t.Run("a stall is concealed, then silence until the delay is back", func(t *testing.T) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		j.Push(opusHdr(0), frames[0])
		j.Push(opusHdr(1), frames[1])
		got := popPackets(j, frames, 7)
		require.Equal(t, []popped{
			{FramePlayed, false, 960, 0}, {FramePlayed, false, 960, 1},
			{FrameConcealed, false, 960, -1}, {FrameConcealed, false, 960, -1}, {FrameConcealed, false, 960, -1},
			{FrameSilence, false, 960, -1}, {FrameSilence, false, 960, -1},
		}, got)
		// The late packet 2 arrives with 3: both play after the delay.
		j.Push(opusHdr(2), frames[2])
		j.Push(opusHdr(3), frames[3])
		require.Equal(t, []popped{{FramePlayed, false, 960, 2}, {FramePlayed, false, 960, 3}}, popPackets(j, frames, 2))
	})
	t.Run("a new SSRC or a sequence jump restarts", func(t *testing.T) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		j.Push(opusHdr(0), frames[0])
		h := opusHdr(1)
		h.SSRC = 9
		require.Equal(t, PushSSRCChange, j.Push(h, frames[1]))
		h = opusHdr(1000)
		h.SSRC = 9
		require.Equal(t, PushResync, j.Push(h, frames[2]))
		h = opusHdr(1001)
		h.SSRC = 9
		j.Push(h, frames[3])
		require.Equal(t, []popped{{FramePlayed, false, 960, 2}, {FramePlayed, false, 960, 3}}, popPackets(j, frames, 2))
	})
	t.Run("longer packets last longer", func(t *testing.T) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		p40 := append([]byte{frames[0][0]&^3 | 1}, frames[0][1:]...) // code 1: two frames
		n, ok := OpusPacketSamples(p40)
		require.True(t, ok)
		require.Equal(t, 1920, n)
		require.Equal(t, PushAccepted, j.Push(opusHdr(0), p40))
		_, _, dur, st := j.Pop(nil)
		require.Equal(t, FramePlayed, st, "40 ms fill the delay")
		require.Equal(t, 1920, dur)
	})
	t.Run("refused", func(t *testing.T) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		require.Equal(t, PushUnsupported, j.Push(&rtp.Header{PayloadType: 0}, frames[0]))
		require.Equal(t, PushUnsupported, j.Push(opusHdr(0), nil))
		require.Equal(t, PushUnsupported, j.Push(opusHdr(0), make([]byte, 1501)))
		_, err := NewPacketJitterBuffer(PCMU, JitterOptions{})
		require.Error(t, err)
	})
	t.Run("a burst is trimmed to the delay", func(t *testing.T) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		for seq := range uint16(12) {
			j.Push(opusHdr(seq), frames[seq])
		}
		got := popPackets(j, frames, 1)
		require.Equal(t, FramePlayed, got[0].st)
		require.Greater(t, got[0].seq, 0, "the oldest were dropped")
		require.Positive(t, j.Dropped())
		require.LessOrEqual(t, j.Buffered(), 240*time.Millisecond)
	})
}

// TestSessionOpus: two Opus sessions over loopback, each with libopus at
// 24 kHz, in plain RTP and in SRTP: the tone one plays reaches the other
// decoded at 24 kHz, the timestamps advance 960 per 20 ms, and the tap
// sees 8 kHz frames.
func TestSessionOpus(t *testing.T) {
	for _, suite := range []string{"", "AES_CM_128_HMAC_SHA1_80"} {
		t.Run("srtp="+suite, func(t *testing.T) { testSessionOpus(t, suite) })
	}
}

func testSessionOpus(t *testing.T, suite string) {
	pool := newPool(t)
	var keysA, keysB *SRTPKeys
	if suite != "" {
		ka, kb := newKey(t, suite), newKey(t, suite)
		keysA, keysB = &SRTPKeys{Suite: suite, Local: ka, Remote: kb}, &SRTPKeys{Suite: suite, Local: kb, Remote: ka}
	}
	var sinkB audioSink
	var lens sync24
	var tap countTap
	a := newSession(t, pool, SessionOptions{Codec: opusPT, SRTP: keysA})
	b := newListeningSession(t, pool, SessionOptions{Codec: opusPT, Tap: &tap, SRTP: keysB}, 24000,
		func(pcm []int16, st FrameStatus) { lens.add(len(pcm)); sinkB.onAudio(pcm, st) })
	a.SetRemote(addr(b.LocalPort()))
	b.SetRemote(addr(a.LocalPort()))
	a.Playout().Write("item_a", tone(1000, 24000, 24000, 8000)) // 1 s
	require.InDelta(t, float64(time.Second), float64(a.Playout().Len()), float64(20*time.Millisecond), "a talkspurt's first frame may leave as it is queued")
	require.Eventually(t, func() bool {
		n, e := sinkB.get()
		return n >= 20 && e > 1000
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 480, lens.get(), "20 ms at 24 kHz per packet")
	require.Contains(t, b.String(), "Jitter(40ms opus) -> Opus(decode 24k)")
	require.Contains(t, b.String(), "Pacer(opus 20ms)")
	require.Zero(t, b.Stats().Strangers)
	in, out := tap.get()
	require.Positive(t, in)
	require.Positive(t, out)
	require.Equal(t, 160, tap.lastIn(), "the tap counts 8 kHz samples")
	seq, ts := a.Pacer().Last()
	var seq2 uint16
	var ts2 uint32
	require.Eventually(t, func() bool { seq2, ts2 = a.Pacer().Last(); return seq2-seq >= 3 }, 2*time.Second, 5*time.Millisecond,
		"the pacer sends on")
	require.Equal(t, uint32(seq2-seq)*960, ts2-ts, "960 ticks per packet")
}

type sync24 struct {
	mu sync.Mutex
	n  int
}

func (s *sync24) add(n int) { s.mu.Lock(); s.n = n; s.mu.Unlock() }
func (s *sync24) get() int  { s.mu.Lock(); defer s.mu.Unlock(); return s.n }

type countTap struct {
	mu       sync.Mutex
	in, out  int
	inLast   int
	outCoded bool
}

func (c *countTap) Inbound(f Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in++
	c.inLast = f.Samples
}

func (c *countTap) Outbound(f Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out++
	c.outCoded = c.outCoded || f.Coded != nil
}

func (c *countTap) get() (int, int) { c.mu.Lock(); defer c.mu.Unlock(); return c.in, c.out }
func (c *countTap) lastIn() int     { c.mu.Lock(); defer c.mu.Unlock(); return c.inLast }

// BenchmarkFrameOpusInbound is one 20 ms Opus packet from the wire to
// 24 kHz PCM: Push, Pop and libopus's decode (what an Opus SIP leg does
// per frame before the audio path, which copies at 24 kHz).
func BenchmarkFrameOpusInbound(b *testing.B) {
	frames := opusFrames(b, 50)
	dec, err := opus.NewDecoder(24000)
	require.NoError(b, err)
	defer dec.Close()
	j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{Delay: 20 * time.Millisecond})
	pkt := make([]byte, 0, maxPacket)
	pcm := make([]int16, 0, 2880)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j.Push(opusHdr(uint16(i)), frames[i%len(frames)])
		var st FrameStatus
		pkt, _, _, st = j.Pop(pkt[:0])
		if st == FramePlayed {
			pcm, _ = dec.Decode(pcm[:0], pkt, 0)
		}
	}
}

// BenchmarkFrameOpusConceal is one lost 20 ms packet concealed, from the
// next packet's FEC data and by PLC.
func BenchmarkFrameOpusConceal(b *testing.B) {
	frames := opusFrames(b, 2)
	dec, err := opus.NewDecoder(24000)
	require.NoError(b, err)
	defer dec.Close()
	pcm := make([]int16, 0, 2880)
	b.Run("fec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pcm, _ = dec.DecodeFEC(pcm[:0], frames[1], 480)
		}
	})
	b.Run("plc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pcm, _ = dec.Decode(pcm[:0], nil, 480)
		}
	})
}

// BenchmarkFrameOpusOutbound is one 20 ms frame of the model's 24 kHz
// audio queued, read by the pacer, Opus-encoded (the SIP leg's settings)
// and sent (to a discard writer), with a tap (health) fed 8 kHz PCMU.
func BenchmarkFrameOpusOutbound(b *testing.B) {
	enc, err := opus.NewEncoder(24000, 32000)
	require.NoError(b, err)
	defer enc.Close()
	require.NoError(b, enc.SetComplexity(5))
	q := NewPlayoutAt(24000)
	tap, err := NewRateTap(&countTap{}, 24000, 24000)
	require.NoError(b, err)
	p, err := NewPacer(discard{}, q, PacerOptions{Codec: opusPT, Encoder: opusEncoder{enc}, Tap: tap})
	require.NoError(b, err)
	pcm := sweep(24000)
	now := time.Unix(0, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f := i % 50
		q.Write("item", pcm[480*f:480*(f+1)])
		if _, err := p.Tick(now); err != nil {
			b.Fatal(err)
		}
		now = now.Add(20 * time.Millisecond)
	}
}

// TestRateTap: PCM at the leg's rate reaches the tap at 8 kHz (outbound
// as PCMU), coded frames pass untouched, and frames without audio have
// their length converted.
func TestRateTap(t *testing.T) {
	var got []Frame
	rec := tapFunc(func(f Frame) { got = append(got, f) })
	rt, err := NewRateTap(rec, 24000, 24000)
	require.NoError(t, err)
	rt.Inbound(Frame{Samples: 480, PCM: tone(1000, 24000, 480, 8000), Status: FramePlayed})
	rt.Outbound(Frame{Samples: 480, PCM: tone(1000, 24000, 480, 8000), Speech: true})
	rt.Outbound(Frame{Samples: 480}) // held
	rt.Inbound(Frame{Samples: 160, Coded: make([]byte, 160), Codec: PCMA})
	require.Len(t, got, 4)
	require.Equal(t, 160, got[0].Samples)
	require.Len(t, got[0].PCM, 160)
	require.Equal(t, PCMU, got[1].Codec)
	require.Len(t, got[1].Coded, 160)
	require.Nil(t, got[1].PCM)
	require.Equal(t, 160, got[2].Samples)
	require.Nil(t, got[2].Coded)
	require.Equal(t, PCMA, got[3].Codec)
	require.Equal(t, 160, got[3].Samples)

	got = nil
	rt8, err := NewRateTap(rec, 8000, 8000)
	require.NoError(t, err)
	pcm := tone(1000, 8000, 160, 8000)
	rt8.Inbound(Frame{Samples: 160, PCM: pcm})
	require.Equal(t, &pcm[0], &got[0].PCM[0], "8 kHz PCM is handed on as it is")
}

type tapFunc func(Frame)

func (f tapFunc) Inbound(fr Frame)  { f(fr) }
func (f tapFunc) Outbound(fr Frame) { f(fr) }

// FuzzPacketJitterBuffer pushes hostile packets (sequence numbers,
// timestamps, SSRCs and payloads from the input) into an Opus jitter
// buffer and pops after each one, decoding what comes out with libopus as
// an Opus session does: nothing panics, durations are whole 2.5 ms steps
// within Opus's range (what a packet can last and libopus can conceal),
// and the buffer's delay stays bounded.
func FuzzPacketJitterBuffer(f *testing.F) {
	frames := opusFrames(f, 3)
	var seed []byte
	for i, p := range frames {
		seed = append(seed, 0, byte(i), 0, 0, byte(i*3), 192, byte(len(p)))
		seed = append(seed, p...)
	}
	f.Add(seed)
	f.Add([]byte{1, 0, 5, 0, 0, 0, 0, 2, 0xfb, 0x30})
	dec, err := opus.NewDecoder(24000)
	require.NoError(f, err)
	f.Cleanup(func() { _ = dec.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		j, _ := NewPacketJitterBuffer(opusPT, JitterOptions{})
		pcm := make([]int16, 0, 2880)
		var pkt []byte
		for len(data) >= 7 {
			h := &rtp.Header{PayloadType: opusPT.PayloadType, SSRC: uint32(data[0] & 1),
				SequenceNumber: uint16(data[1])<<8 | uint16(data[2]),
				Timestamp:      uint32(data[3])<<16 | uint32(data[4])<<8 | uint32(data[5])}
			n := min(int(data[6]), len(data)-7)
			j.Push(h, data[7:7+n])
			data = data[7+n:]
			var fec bool
			var dur int
			var st FrameStatus
			pkt, fec, dur, st = j.Pop(pkt[:0])
			if dur < opusStep || dur > opusMaxSamples || dur%opusStep != 0 {
				t.Fatalf("popped %d ticks", dur)
			}
			switch {
			case st == FramePlayed:
				pcm, _ = dec.Decode(pcm[:0], pkt, 0)
			case st == FrameConcealed && fec:
				pcm, _ = dec.DecodeFEC(pcm[:0], pkt, dur/2)
			}
			if j.Buffered() > 2*40*time.Millisecond+100*time.Millisecond+120*time.Millisecond {
				t.Fatalf("buffered %v", j.Buffered())
			}
		}
	})
}

// TestPacketJitterBufferTimestampsJumpBack: a sender whose timestamps jump
// back mid-stream (a new source behind the same SSRC) is played on without
// a gap: the audio before the jump no longer counts as buffered, so no
// packet after it is dropped as excess delay (found by
// FuzzPacketJitterBuffer: 384 ms "buffered" with nothing stored).
func TestPacketJitterBufferTimestampsJumpBack(t *testing.T) {
	frames := opusFrames(t, 1)
	j, err := NewPacketJitterBuffer(opusPT, JitterOptions{})
	require.NoError(t, err)
	played := 0
	for i := range 60 {
		ts := uint32(100000 + 960*i)
		if i >= 20 {
			ts = uint32(960 * (i - 20)) // 2 s back, then on at 20 ms
		}
		j.Push(&rtp.Header{PayloadType: opusPT.PayloadType, SSRC: 7, SequenceNumber: uint16(i), Timestamp: ts}, frames[0])
		_, _, _, st := j.Pop(nil)
		if st == FramePlayed {
			played++
		}
		require.LessOrEqual(t, j.Buffered(), 100*time.Millisecond, "packet %d", i)
	}
	require.Zero(t, j.Dropped(), "no audio dropped as excess delay")
	require.GreaterOrEqual(t, played, 57, "every packet after the priming is played")
}

// TestPacketJitterBufferOffGridGap: a lost packet whose neighbours'
// timestamps leave a gap no Opus packet can last (5 ticks, 1000 ticks) is
// concealed for the nearest whole 2.5 ms steps, at least one, with the
// next packet's FEC data, and the next packet then plays (found by
// FuzzPacketJitterBuffer: "popped 5 ticks", a concealment libopus refuses).
func TestPacketJitterBufferOffGridGap(t *testing.T) {
	frames := opusFrames(t, 1) // 20 ms packets
	for _, tc := range []struct {
		gap, want int
	}{{5, 120}, {59, 120}, {1000, 960}, {1020, 1080}, {960, 960}} {
		t.Run(fmt.Sprint(tc.gap), func(t *testing.T) {
			j, err := NewPacketJitterBuffer(opusPT, JitterOptions{Delay: 20 * time.Millisecond})
			require.NoError(t, err)
			push := func(seq uint16, ts uint32) {
				j.Push(&rtp.Header{PayloadType: opusPT.PayloadType, SSRC: 9, SequenceNumber: seq, Timestamp: ts}, frames[0])
			}
			push(0, 0)
			_, _, dur, st := j.Pop(nil)
			require.Equal(t, FramePlayed, st)
			require.Equal(t, 960, dur)
			push(2, uint32(960+tc.gap)) // packet 1 is lost
			p, fec, dur, st := j.Pop(nil)
			require.Equal(t, FrameConcealed, st)
			require.True(t, fec, "concealed from the next packet's FEC data")
			require.Equal(t, frames[0], p)
			require.Equal(t, tc.want, dur)
			_, _, dur, st = j.Pop(nil)
			require.Equal(t, FramePlayed, st, "the packet after the loss plays")
			require.Equal(t, 960, dur)
		})
	}
}
