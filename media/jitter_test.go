package media

import (
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

// pkt builds a PCMU packet of one 20 ms frame whose samples all encode v.
func pkt(ssrc uint32, seq uint16, ts uint32, v int16) (*rtp.Header, []byte) {
	pcm := make([]int16, 160)
	for i := range pcm {
		pcm[i] = v
	}
	return &rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: seq, Timestamp: ts, SSRC: ssrc},
		PCMU.EncodeFrame(nil, pcm)
}

// level is the decoded value of the constant frame of v (G.711 quantises).
func level(v int16) int16 {
	return PCMU.DecodeFrame(nil, PCMU.EncodeFrame(nil, []int16{v}))[0]
}

func newJB(t *testing.T) *JitterBuffer {
	t.Helper()
	j, err := NewJitterBuffer(JitterOptions{Ptime: 20 * time.Millisecond, Delay: 40 * time.Millisecond})
	require.NoError(t, err)
	return j
}

// popAll pops n frames and returns the first sample of each and the statuses.
func popAll(j *JitterBuffer, n int) ([]int16, []FrameStatus) {
	var firsts []int16
	var sts []FrameStatus
	buf := make([]int16, 0, 160)
	for range n {
		var st FrameStatus
		buf, st = j.Pop(buf[:0])
		firsts = append(firsts, buf[0])
		sts = append(sts, st)
	}
	return firsts, sts
}

func TestJitterBuffer(t *testing.T) {
	const base = 1000
	type push struct {
		seq  uint16
		v    int16
		ssrc uint32
		want PushResult
	}
	tests := []struct {
		name      string
		pushes    []push
		pops      int
		wantFirst []int16
		wantSts   []FrameStatus
	}{{
		name:      "in order after the initial delay",
		pushes:    []push{{0, 100, 1, PushAccepted}, {1, 200, 1, PushAccepted}, {2, 300, 1, PushAccepted}},
		pops:      5,
		wantFirst: []int16{0, 0, level(100), level(200), level(300)},
		wantSts:   []FrameStatus{FrameSilence, FrameSilence, FramePlayed, FramePlayed, FramePlayed},
	}, {
		name:      "reordered",
		pushes:    []push{{0, 100, 1, PushAccepted}, {2, 300, 1, PushAccepted}, {1, 200, 1, PushAccepted}},
		pops:      5,
		wantFirst: []int16{0, 0, level(100), level(200), level(300)},
		wantSts:   []FrameStatus{FrameSilence, FrameSilence, FramePlayed, FramePlayed, FramePlayed},
	}, {
		name:      "duplicate dropped",
		pushes:    []push{{0, 100, 1, PushAccepted}, {0, 100, 1, PushDuplicate}, {1, 200, 1, PushAccepted}},
		pops:      4,
		wantFirst: []int16{0, 0, level(100), level(200)},
		wantSts:   []FrameStatus{FrameSilence, FrameSilence, FramePlayed, FramePlayed},
	}, {
		name:   "loss concealed by attenuated repeats then silence",
		pushes: []push{{0, 10000, 1, PushAccepted}, {5, 500, 1, PushAccepted}},
		pops:   8,
		wantFirst: []int16{0, 0, level(10000),
			int16(float32(level(10000)) * 0.7), int16(float32(level(10000)) * 0.4), int16(float32(level(10000)) * 0.15),
			0, level(500)},
		wantSts: []FrameStatus{FrameSilence, FrameSilence, FramePlayed,
			FrameConcealed, FrameConcealed, FrameConcealed, FrameSilence, FramePlayed},
	}, {
		name:      "ssrc change resets the stream",
		pushes:    []push{{0, 100, 1, PushAccepted}, {7, 900, 2, PushSSRCChange}},
		pops:      3,
		wantFirst: []int16{0, 0, level(900)},
		wantSts:   []FrameStatus{FrameSilence, FrameSilence, FramePlayed},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJB(t)
			for _, p := range tt.pushes {
				ts := uint32(base + int(p.seq)*160)
				if p.ssrc == 2 {
					ts = 777777 // a new stream has its own random timestamp base
				}
				h, pl := pkt(p.ssrc, p.seq, ts, p.v)
				require.Equal(t, p.want, j.Push(h, pl), "push seq %d", p.seq)
			}
			firsts, sts := popAll(j, tt.pops)
			require.Equal(t, tt.wantFirst, firsts)
			require.Equal(t, tt.wantSts, sts)
		})
	}
}

func TestJitterBufferLateAndResync(t *testing.T) {
	j := newJB(t)
	h, pl := pkt(1, 0, 0, 100)
	require.Equal(t, PushAccepted, j.Push(h, pl))
	_, sts := popAll(j, 4) // plays through ts 320..640
	require.Equal(t, FramePlayed, sts[2])
	// A packet older than the playout point is late ...
	h, pl = pkt(1, 1, 160, 200)
	require.Equal(t, PushLate, j.Push(h, pl))
	// ... and a run of them (sender clock far behind ours) realigns.
	var res PushResult
	for i := range lateResync - 1 {
		h, pl = pkt(1, uint16(2+i), 0, 300)
		res = j.Push(h, pl)
	}
	require.Equal(t, PushResync, res)
	firsts, sts := popAll(j, 3)
	require.Equal(t, []FrameStatus{FrameSilence, FrameSilence, FramePlayed}, sts)
	require.Equal(t, level(300), firsts[2])

	// A timestamp jump far ahead realigns too.
	h, pl = pkt(1, 10, 5_000_000, 400)
	require.Equal(t, PushResync, j.Push(h, pl))
	firsts, _ = popAll(j, 3)
	require.Equal(t, level(400), firsts[2])
}

func TestJitterBufferOddPacketisation(t *testing.T) {
	// The sender uses 30 ms packets, we pull 20 ms frames.
	j := newJB(t)
	pcm := make([]int16, 240)
	for i := range pcm {
		pcm[i] = int16(i * 10)
	}
	for n := range 4 {
		h := &rtp.Header{PayloadType: 8, SequenceNumber: uint16(n), Timestamp: uint32(n * 240), SSRC: 5}
		require.Equal(t, PushAccepted, j.Push(h, PCMA.EncodeFrame(nil, pcm)))
	}
	var all []int16
	buf := make([]int16, 0, 160)
	for range 8 {
		var st FrameStatus
		buf, st = j.Pop(buf[:0])
		if st == FramePlayed {
			all = append(all, buf...)
		}
	}
	require.Len(t, all, 960)
	want := PCMA.DecodeFrame(nil, PCMA.EncodeFrame(nil, pcm))
	require.Equal(t, want, all[240:480])
}

// TestJitterBufferOverflowBoundsDelay: audio that arrives in a burst (a
// network stall's backlog) does not become lasting delay: what is more
// than the buffer's bound (2×target + slack) ahead is dropped by Pop, and
// a packet further ahead than the ring (512 ms at 40 ms) realigns the
// buffer on it; either way the delay stays within the bound.
func TestJitterBufferOverflowBoundsDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		packets int
		resync  bool
	}{{"300 ms burst", 15, false}, {"1 s burst", 50, true}} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJB(t)
			resyncs := 0
			for n := range tc.packets {
				h, pl := pkt(1, uint16(n), uint32(n*160), 100)
				if j.Push(h, pl) == PushResync {
					resyncs++
				}
			}
			require.Equal(t, tc.resync, resyncs > 0)
			require.Greater(t, j.Buffered(), 80*time.Millisecond, "the burst is stored")
			buf := make([]int16, 0, 160)
			st := FrameSilence
			for range 3 { // a realigned buffer first plays its target delay
				if buf, st = j.Pop(buf[:0]); st == FramePlayed {
					break
				}
			}
			require.Equal(t, FramePlayed, st)
			// Bounded by what Pop lets the buffer keep: twice the target
			// and the slack (180 ms); a drop brings it back to the target.
			require.LessOrEqual(t, j.Buffered(), 2*40*time.Millisecond+overflowSlack*time.Second/ClockRate)
			if !tc.resync {
				require.Positive(t, j.Dropped())
				require.LessOrEqual(t, j.Buffered(), 40*time.Millisecond)
			}
			_ = buf
		})
	}
}

func TestJitterBufferIgnores(t *testing.T) {
	j := newJB(t)
	require.Equal(t, PushUnsupported, j.Push(&rtp.Header{PayloadType: 101}, []byte{1, 2, 3, 4}))
	require.Equal(t, PushUnsupported, j.Push(&rtp.Header{PayloadType: 0}, nil))
	_, st := j.Pop(nil)
	require.Equal(t, FrameIdle, st)
	_, err := NewJitterBuffer(JitterOptions{Ptime: 5 * time.Millisecond})
	require.ErrorIs(t, err, errBadPtime)
	require.Equal(t, "Jitter(40ms)", j.String())
}

func TestJitterBufferNoAllocPerFrame(t *testing.T) {
	j := newJB(t)
	var seq uint16
	buf := make([]int16, 0, 160)
	allocs := testing.AllocsPerRun(200, func() {
		h, pl := benchPkt(seq)
		j.Push(h, pl)
		buf, _ = j.Pop(buf[:0])
		seq++
	})
	require.Zero(t, allocs)
}

var (
	benchHeader  rtp.Header
	benchPayload = make([]byte, 160)
)

func benchPkt(seq uint16) (*rtp.Header, []byte) {
	benchHeader = rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: seq, Timestamp: uint32(seq) * 160, SSRC: 9}
	return &benchHeader, benchPayload
}

func FuzzJitterPush(f *testing.F) {
	h, pl := pkt(1, 0, 0, 100)
	raw, _ := (&rtp.Packet{Header: *h, Payload: pl}).Marshal()
	f.Add(raw, raw)
	f.Add([]byte{0x80, 0x08, 0, 1, 0xff, 0xff, 0xff, 0x00, 0, 0, 0, 1, 0xd5}, []byte{0x80})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		j, err := NewJitterBuffer(JitterOptions{})
		require.NoError(t, err)
		var s Stats
		var rx rxStats
		buf := make([]int16, 0, 160)
		for i, raw := range [][]byte{a, b, a} {
			var p rtp.Packet
			if p.Unmarshal(raw) != nil {
				continue
			}
			s.CountPush(j.Push(&p.Header, p.Payload))
			rx.update(p.SSRC, p.SequenceNumber, p.Timestamp, time.Unix(int64(i), 0))
			rx.publish(&s)
			var st FrameStatus
			buf, st = j.Pop(buf[:0])
			s.CountFrame(st)
			require.Len(t, buf, 160)
		}
		require.LessOrEqual(t, j.Buffered(), 2100*time.Millisecond)
	})
}

// TestJitterRingFitsItsTarget: the ring holds twice what Pop lets the
// buffer keep, from 512 ms at the default 40 ms target up.
func TestJitterRingFitsItsTarget(t *testing.T) {
	for _, tc := range []struct {
		delay time.Duration
		ring  int
	}{{20 * time.Millisecond, 4096}, {40 * time.Millisecond, 4096}, {200 * time.Millisecond, 8192}, {500 * time.Millisecond, 32768}} {
		j, err := NewCodedJitterBuffer(PCMU, JitterOptions{Delay: tc.delay})
		require.NoError(t, err)
		require.Equal(t, tc.ring, len(j.ring), "%v", tc.delay)
		require.GreaterOrEqual(t, len(j.ring), 2*(2*j.target+overflowSlack))
	}
}
