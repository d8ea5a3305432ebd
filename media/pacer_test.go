package media

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/stretchr/testify/require"
)

type sent struct {
	h       rtp.Header
	payload []byte
}

// recorder is a PacketWriter that keeps copies of what was sent.
type recorder struct {
	mu   sync.Mutex
	pkts []sent
}

func (r *recorder) WriteRTP(h *rtp.Header, payload []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pkts = append(r.pkts, sent{h: *h, payload: bytes.Clone(payload)})
	return nil
}

func (r *recorder) take() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pkts
	r.pkts = nil
	return p
}

// fakeClock is advanced by the test.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestPacer(t *testing.T) (*Pacer, *Playout, *recorder, *fakeClock) {
	t.Helper()
	seq, ts := uint16(65530), uint32(1<<32-400)
	clk := &fakeClock{t: time.Unix(1000, 0)}
	q := NewPlayout()
	rec := &recorder{}
	p, err := NewPacer(rec, q, PacerOptions{Ptime: 20 * time.Millisecond, SSRC: 42, FirstSeq: &seq, FirstTimestamp: &ts, Now: clk.now})
	require.NoError(t, err)
	return p, q, rec, clk
}

// run ticks the pacer frame by frame for n frames, each tick a little late.
func run(t *testing.T, p *Pacer, clk *fakeClock, n int) {
	t.Helper()
	for range n {
		next, err := p.Tick(clk.t)
		require.NoError(t, err)
		clk.t = next.Add(3 * time.Millisecond) // scheduling latency must not accumulate
	}
}

func requireContinuous(t *testing.T, pkts []sent, seq uint16, ts uint32) {
	t.Helper()
	for i, pk := range pkts {
		require.Equal(t, seq+uint16(i), pk.h.SequenceNumber, "packet %d", i)
		require.Equal(t, ts+uint32(i*160), pk.h.Timestamp, "packet %d", i)
		require.Equal(t, uint32(42), pk.h.SSRC)
	}
}

func markers(pkts []sent) []int {
	var m []int
	for i, pk := range pkts {
		if pk.h.Marker {
			m = append(m, i)
		}
	}
	return m
}

func TestPacerTalkspurts(t *testing.T) {
	p, q, rec, clk := newTestPacer(t)
	run(t, p, clk, 3) // silence
	q.Write("a", tone(440, 8000, 480, 8000))
	run(t, p, clk, 5) // 3 frames of speech, then silence
	q.Write("b", tone(440, 8000, 200, 8000))
	run(t, p, clk, 4) // 2 frames (the second padded), then silence
	pkts := rec.take()
	require.Len(t, pkts, 12)
	requireContinuous(t, pkts, 65530, 1<<32-400) // both wrap
	require.Equal(t, []int{3, 8}, markers(pkts))
	for _, i := range []int{0, 1, 2, 6, 7, 10, 11} {
		require.Equal(t, bytes.Repeat([]byte{0xFF}, 160), pkts[i].payload, "packet %d is silence", i)
	}
	require.Equal(t, PCMU.EncodeFrame(nil, tone(440, 8000, 160, 8000)), pkts[3].payload)
	// the padded frame: 40 samples of audio, then silence
	require.Equal(t, bytes.Repeat([]byte{0xFF}, 120), pkts[9].payload[40:])
}

func TestPacerFlushWithinOneFrame(t *testing.T) {
	p, q, rec, clk := newTestPacer(t)
	q.Write("item_1", tone(300, 8000, 8000, 8000)) // 1 s
	run(t, p, clk, 6)                              // 120 ms sent
	id, ms := q.Flush()
	require.Equal(t, "item_1", id)
	require.Equal(t, 120, ms)
	q.Write("item_1", tone(300, 8000, 800, 8000)) // late delta of the cut item: dropped
	run(t, p, clk, 1)
	pkts := rec.take()
	require.Len(t, pkts, 7)
	require.Equal(t, bytes.Repeat([]byte{0xFF}, 160), pkts[6].payload, "silence right after flush")
	require.Zero(t, q.Len())

	// Next item plays normally, marker again.
	q.Write("item_2", tone(300, 8000, 160, 8000))
	run(t, p, clk, 1)
	pkts = rec.take()
	require.True(t, pkts[0].h.Marker)
	id, ms = q.Flush()
	require.Equal(t, "item_2", id)
	require.Equal(t, 20, ms)
}

func TestPlayoutFlushCases(t *testing.T) {
	tests := []struct {
		name   string
		writes []string // item per 10 ms write
		read   int      // samples read before Flush
		wantID string
		wantMs int
	}{
		{"nothing ever played", nil, 0, "", 0},
		{"queued but not started", []string{"a", "a"}, 0, "a", 0},
		{"middle of first item", []string{"a", "a", "a"}, 120, "a", 15},
		{"first item done, second queued", []string{"a", "b", "b"}, 80, "b", 0},
		{"into second item", []string{"a", "b", "b"}, 120, "b", 5},
		{"everything played", []string{"a", "a"}, 320, "a", 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewPlayout()
			for _, id := range tt.writes {
				q.Write(id, make([]int16, 80))
			}
			if tt.read > 0 {
				q.Read(nil, tt.read)
			}
			id, ms := q.Flush()
			require.Equal(t, tt.wantID, id)
			require.Equal(t, tt.wantMs, ms)
			_, speech := q.Read(nil, 160)
			require.False(t, speech)
		})
	}
}

func TestPacerPauseResume(t *testing.T) {
	p, q, rec, clk := newTestPacer(t)
	q.Write("a", make([]int16, 1600))
	run(t, p, clk, 2)
	p.Pause()
	run(t, p, clk, 10) // hold: nothing sent, clock keeps running
	p.Resume()
	run(t, p, clk, 2)
	pkts := rec.take()
	require.Len(t, pkts, 4)
	require.Equal(t, pkts[1].h.SequenceNumber+1, pkts[2].h.SequenceNumber, "seq continuous")
	require.Equal(t, pkts[1].h.Timestamp+11*160, pkts[2].h.Timestamp, "timestamps kept advancing")
	require.Equal(t, []int{0, 2}, markers(pkts))
	require.Equal(t, 160*time.Second/8000*6, q.Len(), "queue waited during hold")
}

func TestPacerDriftFree(t *testing.T) {
	p, _, rec, clk := newTestPacer(t)
	start := clk.t
	// Tick at irregular late times for 1 s: exactly 50 frames, never more.
	for clk.t.Before(start.Add(time.Second)) {
		_, err := p.Tick(clk.t)
		require.NoError(t, err)
		clk.t = clk.t.Add(17 * time.Millisecond)
	}
	require.Len(t, rec.take(), 50)

	// A stall longer than MaxCatchUp frames skips instead of bursting; the
	// timestamp still follows the clock.
	_, ts0 := p.Last()
	clk.t = start.Add(2 * time.Second)
	next, err := p.Tick(clk.t)
	require.NoError(t, err)
	pkts := rec.take()
	require.Len(t, pkts, 1, "the 50 overdue frames are skipped, the due one sent")
	require.Equal(t, start.Add(2*time.Second+20*time.Millisecond), next)
	_, ts1 := p.Last()
	require.Equal(t, uint32(51*160), ts1-ts0)
	require.Equal(t, ts0+50*160, pkts[0].h.Timestamp)
}

type dtmfStub struct{ left int }

func (d *dtmfStub) NextEvent(uint32) (uint8, bool, uint32, []byte, bool) {
	if d.left == 0 {
		return 0, false, 0, nil, false
	}
	d.left--
	return 101, d.left == 2, 5555, []byte{1, 0x0a, 0, 160}, true
}

func TestPacerEventsShareSequence(t *testing.T) {
	p, q, rec, clk := newTestPacer(t)
	q.Write("a", make([]int16, 640))
	run(t, p, clk, 1)
	p.SetEventSource(&dtmfStub{left: 3})
	run(t, p, clk, 4)
	pkts := rec.take()
	require.Len(t, pkts, 5)
	for i, pk := range pkts {
		require.Equal(t, uint16(65530+i), pk.h.SequenceNumber)
	}
	require.Equal(t, []uint8{0, 101, 101, 101, 0}, []uint8{pkts[0].h.PayloadType, pkts[1].h.PayloadType, pkts[2].h.PayloadType, pkts[3].h.PayloadType, pkts[4].h.PayloadType})
	require.True(t, pkts[1].h.Marker)
	require.True(t, pkts[4].h.Marker, "audio after an event starts a talkspurt")
	require.Equal(t, pkts[0].h.Timestamp+4*160, pkts[4].h.Timestamp)
}

func TestPacerOptions(t *testing.T) {
	_, err := NewPacer(&recorder{}, NewPlayout(), PacerOptions{Ptime: 70 * time.Millisecond})
	require.ErrorIs(t, err, errBadPtime)
	p, q, rec, clk := newTestPacer(t)
	p.SetCodec(PCMA)
	require.NoError(t, p.SetPtime(30*time.Millisecond))
	require.Error(t, p.SetPtime(5*time.Millisecond))
	require.Equal(t, "Pacer(PCMA 30ms)", p.String())
	_ = q
	next, err := p.Tick(clk.t)
	require.NoError(t, err)
	require.Equal(t, clk.t.Add(30*time.Millisecond), next)
	pkts := rec.take()
	require.Len(t, pkts, 1)
	require.Equal(t, uint8(8), pkts[0].h.PayloadType)
	require.Equal(t, bytes.Repeat([]byte{0xD5}, 240), pkts[0].payload)
}

func TestPacerRunRealClock(t *testing.T) {
	q := NewPlayout()
	rec := &recorder{}
	p, err := NewPacer(rec, q, PacerOptions{Ptime: 10 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Run(ctx), context.DeadlineExceeded)
	pkts := rec.take()
	require.NotEmpty(t, pkts)
	for i := 1; i < len(pkts); i++ {
		require.Equal(t, pkts[i-1].h.SequenceNumber+1, pkts[i].h.SequenceNumber)
		require.Equal(t, pkts[i-1].h.Timestamp+80, pkts[i].h.Timestamp)
	}
}

// TestPacerResumeSendsAtOnce: audio queued while paused (a greeting queued
// before the answer) goes out on the first Tick after Resume, not at the
// old schedule's next slot, and the schedule then runs from there.
func TestPacerResumeSendsAtOnce(t *testing.T) {
	p, q, rec, clk := newTestPacer(t)
	p.Pause()
	_, err := p.Tick(clk.t) // anchors the schedule; the paused frame is skipped
	require.NoError(t, err)
	clk.t = clk.t.Add(20 * time.Millisecond)
	_, err = p.Tick(clk.t) // the media loop keeps ticking while paused
	require.NoError(t, err)
	require.Empty(t, rec.take())
	q.Write("greeting", make([]int16, 800))
	clk.t = clk.t.Add(7 * time.Millisecond) // 13 ms before the next slot
	p.Resume()
	next, err := p.Tick(clk.t)
	require.NoError(t, err)
	pkts := rec.take()
	require.Len(t, pkts, 1, "the first frame goes out at the Resume's tick")
	require.True(t, pkts[0].h.Marker)
	require.Equal(t, clk.t.Add(20*time.Millisecond), next, "the schedule continues from there")
}

// TestPacerKickStartsTalkspurtAtOnce: audio queued between two silent
// slots goes out at once, marked, with the timestamp that follows the last
// packet; the packets after it keep the schedule's slots (never faster than
// real time), with continuous timestamps. No kick while talking, paused or
// short of a frame.
func TestPacerKickStartsTalkspurtAtOnce(t *testing.T) {
	p, q, rec, clk := newTestPacer(t)
	start := clk.t
	for range 3 { // silence on the grid start + n*20ms
		next, err := p.Tick(clk.t)
		require.NoError(t, err)
		clk.t = next
	}
	silent := rec.take()
	require.Len(t, silent, 3)
	require.False(t, p.Kick(), "nothing queued")
	clk.t = start.Add(53 * time.Millisecond) // 7 ms before the slot at 60 ms
	q.Write("a", make([]int16, 80))
	require.False(t, p.Kick(), "half a frame only")
	q.Write("a", tone(440, 8000, 160*3-80, 4000))
	require.True(t, p.Kick())
	next, err := p.Tick(clk.t)
	require.NoError(t, err)
	first := rec.take()
	require.Len(t, first, 1, "sent at once")
	require.True(t, first[0].h.Marker)
	require.Equal(t, silent[2].h.Timestamp+160, first[0].h.Timestamp, "timestamps continuous")
	require.Equal(t, start.Add(80*time.Millisecond), next, "the next packet keeps its slot")
	require.False(t, p.Kick(), "talking")
	for range 3 {
		clk.t = next
		next, err = p.Tick(clk.t)
		require.NoError(t, err)
	}
	pkts := rec.take()
	require.Len(t, pkts, 3) // two more frames of audio, then silence at 120 ms
	requireContinuous(t, append(first, pkts...), first[0].h.SequenceNumber, first[0].h.Timestamp)
	require.False(t, pkts[2].h.Marker)
	require.Equal(t, start.Add(140*time.Millisecond), next)
	p.Pause()
	q.Write("b", make([]int16, 320))
	require.False(t, p.Kick(), "paused")
}
