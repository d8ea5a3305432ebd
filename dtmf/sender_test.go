package dtmf

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestSender drives the sender the way the pacer does, one call per 20 ms
// frame, and checks what goes on the wire: one timestamp per key, the
// marker on its first packet, durations growing by one frame, the end
// packet three times, DefaultKeyGap of audio between keys.
func TestSender(t *testing.T) {
	var sent []byte
	s := NewSender(101, SendOptions{Interval: 20 * time.Millisecond})
	done, err := s.Send("1#", func(d byte, _ time.Time) { sent = append(sent, d) })
	require.NoError(t, err)
	type pkt struct {
		ts      uint32
		marker  bool
		payload Payload
	}
	var pkts []pkt
	var audio []uint32
	for tick := range 40 {
		ts := 1000 + uint32(tick)*160
		pt, marker, evTS, payload, ok := s.NextEvent(ts)
		if !ok {
			audio = append(audio, ts)
			continue
		}
		require.Equal(t, uint8(101), pt)
		pl, err := ParsePayload(payload)
		require.NoError(t, err)
		pkts = append(pkts, pkt{evTS, marker, pl})
	}
	// 100 ms key at 20 ms: 5 updates + 3 end packets, per digit.
	require.Len(t, pkts, 16)
	for d, code := range []uint8{1, 11} {
		key := pkts[d*8 : d*8+8]
		for i, k := range key {
			require.Equal(t, key[0].ts, k.ts, "one timestamp per key press (RFC 4733 2.5.1.1)")
			require.Equal(t, code, k.payload.Event)
			require.Equal(t, i == 0, k.marker)
			require.Equal(t, i >= 5, k.payload.End)
			if i < 5 {
				require.Equal(t, uint16(i*160), k.payload.Duration)
			} else {
				require.Equal(t, uint16(800), k.payload.Duration)
			}
		}
	}
	require.Equal(t, uint32(1000), pkts[0].ts)
	// The second key starts after a 100 ms gap (5 frames of audio).
	require.Equal(t, uint32(1000+13*160), pkts[8].ts)
	require.Equal(t, []uint32{1000 + 8*160, 1000 + 9*160, 1000 + 10*160, 1000 + 11*160, 1000 + 12*160}, audio[:5])
	require.Equal(t, "1#", string(sent))
	select {
	case <-done:
	default:
		t.Fatal("done not closed after the gap that follows the last digit")
	}
}

// TestSenderQueueAndClose: requests go out in order; Close releases the
// waiters of what was not sent; bad digits are refused up front.
func TestSenderQueueAndClose(t *testing.T) {
	s := NewSender(101, SendOptions{})
	for _, bad := range []string{"", "12x", string(make([]byte, MaxSendDigits+1))} {
		_, err := s.Send(bad, nil)
		require.ErrorIs(t, err, ErrDigits)
	}
	var order []byte
	first, err := s.Send("1", func(d byte, _ time.Time) { order = append(order, d) })
	require.NoError(t, err)
	second, err := s.Send("2", func(d byte, _ time.Time) { order = append(order, d) })
	require.NoError(t, err)
	for tick := uint32(0); tick < 14; tick++ {
		s.NextEvent(tick * 160)
	}
	<-first
	require.Equal(t, "1", string(order))
	s.Close()
	<-second
	s.Close()
	after, err := s.Send("3", nil)
	require.NoError(t, err)
	<-after
	_, _, _, _, ok := s.NextEvent(0)
	require.False(t, ok)
}

// TestTones: the in-band rendering is detected back as the same keys.
func TestTones(t *testing.T) {
	pcm, err := Tones("159#", 8000)
	require.NoError(t, err)
	require.Len(t, pcm, 4*(800+800))
	d := NewDetector(DetectorOptions{})
	var got []byte
	for off := 0; off+160 <= len(pcm)+1600; off += 160 {
		frame := make([]int16, 160)
		if off < len(pcm) {
			copy(frame, pcm[off:])
		}
		for _, ev := range d.Process(nil, frame, time.Now()) {
			got = append(got, ev.Digit)
		}
	}
	require.Equal(t, "159#", string(got))
	_, err = Tones("", 8000)
	require.ErrorIs(t, err, ErrDigits)
}

// fakeClock runs AfterFunc callbacks when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c   *fakeClock
	at  time.Time
	f   func()
	set bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, set: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.set
	t.set = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.set
	t.at, t.set = t.c.now.Add(d), true
	return was
}

// advance moves the clock and fires the timers that are due, outside the
// clock's lock (as time.AfterFunc runs them in their own goroutine).
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if t.set && !t.at.After(c.now) {
			t.set = false
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// sinkLog records what a keypad reports.
type sinkLog struct {
	mu      sync.Mutex
	keys    []byte
	texts   []string
	actions []Action
}

func (s *sinkLog) Key(ev Event) {
	s.mu.Lock()
	s.keys = append(s.keys, ev.Digit)
	s.mu.Unlock()
}

func (s *sinkLog) Text(text string, _ Flush) {
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.mu.Unlock()
}

func (s *sinkLog) Action(a Action) {
	s.mu.Lock()
	s.actions = append(s.actions, a)
	s.mu.Unlock()
}

func (s *sinkLog) snapshot() ([]byte, []string, []Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.keys...), append([]string(nil), s.texts...), append([]Action(nil), s.actions...)
}

// TestKeypadFlushRules: # flushes at once, the idle timeout flushes by
// itself exactly when it is due (on the injected clock), speech flushes,
// and nothing is delivered after Close.
func TestKeypadFlushRules(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	sink := &sinkLog{}
	k, err := NewKeypad(sink, KeypadOptions{Clock: clk})
	require.NoError(t, err)
	key := func(d byte) { k.Add(Event{Digit: d, Source: SourceINFO, At: clk.Now()}) }

	key('1')
	key('2')
	key('#')
	_, texts, _ := sink.snapshot()
	require.Equal(t, []string{"The caller entered 12 on the phone keypad and pressed # to finish."}, texts)

	key('7')
	clk.advance(DefaultIdleTimeout - time.Millisecond)
	_, texts, _ = sink.snapshot()
	require.Len(t, texts, 1, "not flushed before the idle timeout")
	clk.advance(time.Millisecond)
	_, texts, _ = sink.snapshot()
	require.Equal(t, "The caller entered 7 on the phone keypad.", texts[1])

	key('8')
	k.SpeechStarted()
	keys, texts, _ := sink.snapshot()
	require.Len(t, texts, 3)
	require.Equal(t, "12#78", string(keys))

	key('9')
	k.Close()
	k.Close()
	clk.advance(time.Hour)
	key('0')
	k.SpeechStarted()
	keys, texts, _ = sink.snapshot()
	require.Len(t, texts, 3)
	require.Equal(t, "12#789", string(keys))
}

// TestKeypadPolicies: redact hides the digits from the model's text but
// reports each key; route maps a key to its action without the model.
func TestKeypadPolicies(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	sink := &sinkLog{}
	k, err := NewKeypad(sink, KeypadOptions{Clock: clk, Policy: Policy{Mode: ModeRedact}})
	require.NoError(t, err)
	for _, d := range []byte("4242#") {
		k.Add(Event{Digit: d, Source: SourceRTP, At: clk.Now(), RTPTimestamp: uint32(d)})
	}
	keys, texts, _ := sink.snapshot()
	require.Equal(t, "4242#", string(keys))
	require.Len(t, texts, 1)
	require.NotContains(t, texts[0], "4242")

	sink = &sinkLog{}
	k, err = NewKeypad(sink, KeypadOptions{Clock: clk, Policy: Policy{Mode: ModeRoute,
		Routes: map[string]Action{"0": {Kind: ActionHangup}}}})
	require.NoError(t, err)
	k.Add(Event{Digit: '0', Source: SourceINFO, At: clk.Now()})
	_, _, actions := sink.snapshot()
	require.Equal(t, []Action{{Kind: ActionHangup}}, actions)
}

// TestKeypadConcurrent: keys from several goroutines, the timer and
// speech at once, under -race; every key is reported once.
func TestKeypadConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	sink := &sinkLog{}
	k, err := NewKeypad(sink, KeypadOptions{IdleTimeout: time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k.Add(Event{Digit: '0' + byte(i%10), Source: SourceRTP, At: time.Now(), RTPTimestamp: uint32(g*1000 + i)})
				if i%7 == 0 {
					k.SpeechStarted()
				}
			}
		}()
	}
	wg.Wait()
	k.Close()
	keys, _, _ := sink.snapshot()
	require.Len(t, keys, 200)
}

// TestSources: RFC 4733 packets, INFO bodies and in-band tones all come
// out as key presses; garbage is refused with an error.
func TestSources(t *testing.T) {
	var got []Event
	s := NewSources(true, func(ev Event) { got = append(got, ev) })
	require.True(t, s.Inband())
	now := time.Now()
	payload := Payload{Event: 5, End: true, Volume: 10, Duration: 800}.AppendTo(nil)
	require.NoError(t, s.RTP(1234, payload, now))
	require.NoError(t, s.INFO(ContentTypeDTMFRelay, []byte("Signal=7\r\nDuration=100\r\n"), now))
	require.Error(t, s.INFO("text/plain", []byte("hello"), now))
	require.Error(t, s.RTP(1, []byte{1}, now))
	pcm, err := Tones("3", 8000)
	require.NoError(t, err)
	for off := 0; off < len(pcm)+1600; off += 160 {
		frame := make([]int16, 160)
		if off < len(pcm) {
			copy(frame, pcm[off:])
		}
		s.Audio(frame, now)
	}
	var digits []byte
	for _, ev := range got {
		digits = append(digits, ev.Digit)
	}
	require.Equal(t, "573", string(digits))
	require.False(t, NewSources(false, nil).Inband())
}

// FuzzSources feeds arbitrary RTP payloads and INFO bodies: nothing
// panics, and every reported key is a valid digit.
func FuzzSources(f *testing.F) {
	f.Add(uint32(1), []byte{1, 0x8a, 3, 0x20}, "application/dtmf-relay", []byte("Signal=1\r\nDuration=100\r\n"))
	f.Add(uint32(0), []byte{}, "application/dtmf", []byte("#"))
	f.Fuzz(func(t *testing.T, ts uint32, payload []byte, ct string, body []byte) {
		s := NewSources(false, func(ev Event) {
			if !ValidDigit(ev.Digit) {
				t.Fatalf("invalid digit %q", ev.Digit)
			}
		})
		now := time.Now()
		_ = s.RTP(ts, payload, now)
		_ = s.INFO(ct, body, now)
		s.Audio(make([]int16, 160), now.Add(time.Second))
	})
}
