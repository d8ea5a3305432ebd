package stream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
)

func newSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// marksWaiting is how many of the bot's marks wait for their audio.
func (s *Stream) marksWaiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pb.marks)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func ramp(n int, from byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = from + byte(i%100)
	}
	return b
}

// seqChecker checks that sequenceNumber counts every message but
// connected from 1.
type seqChecker struct{ n int }

func (s *seqChecker) check(t *testing.T, m map[string]any) {
	t.Helper()
	s.n++
	require.Equal(t, strconv.Itoa(s.n), m["sequenceNumber"], "message %v", m)
}

// running starts the stream's Run and returns a stop that ends it and
// returns its error.
func running(t *testing.T, s *Stream) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return")
		}
		return nil
	}
}

// TestTwilioStream walks one stream through the protocol: the signed
// upgrade, connected and start with every field, the caller's audio and
// keys, the bot's audio in chunks of any size played by the pacer, marks
// answered exactly when the audio before them has been sent, the both
// track's outbound audio, clear, and stop when the call ends.
func TestTwilioStream(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	secret := newSecret(t)
	sv := NewService(Options{})
	s := sv.New(ph, call.StreamTarget{URL: bot.url(), Parameters: map[string]string{"lang": "en", "tier": "gold"},
		AuthToken: "tok-1", SigningSecret: secret, Track: TrackBoth}, media.Format{}, nil)
	require.Equal(t, media.FormatPCMU, s.Format())
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)

	h := <-bot.header
	require.Equal(t, "Bearer tok-1", h.Get("Authorization"))
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify([]byte(bot.url()), h), "the upgrade is signed over the stream's URL")
	require.Equal(t, s.SID(), h.Get("webhook-id"))

	require.Equal(t, map[string]any{"event": "connected", "protocol": "Call", "version": "1.0.0"}, c.next(t))
	var seq seqChecker
	start := c.next(t)
	seq.check(t, start)
	require.Equal(t, "start", start["event"])
	require.Regexp(t, `^MZ[0-9a-f]{32}$`, start["streamSid"])
	require.Equal(t, map[string]any{"accountSid": "team_1", "streamSid": s.SID(), "callSid": ph.id,
		"tracks": []any{"inbound", "outbound"}, "customParameters": map[string]any{"lang": "en", "tier": "gold"},
		"mediaFormat": map[string]any{"encoding": "audio/x-mulaw", "sampleRate": float64(8000), "channels": float64(1)}}, start["start"])
	stop := running(t, s)

	frame := ramp(160, 0)
	s.Audio(frame)
	m := c.next(t)
	seq.check(t, m)
	require.Equal(t, "media", m["event"])
	require.Equal(t, s.SID(), m["streamSid"])
	med := m["media"].(map[string]any)
	require.Equal(t, "inbound", med["track"])
	require.Equal(t, "1", med["chunk"])
	require.Equal(t, b64(frame), med["payload"])
	ts, err := strconv.Atoi(med["timestamp"].(string))
	require.NoError(t, err)
	require.GreaterOrEqual(t, ts, 0)

	// The bot's audio in odd chunks: 480 bytes (3 frames), mark a, 160
	// bytes, mark b.
	speech := ramp(640, 100)
	for _, part := range [][2]int{{0, 100}, {100, 350}, {350, 480}} {
		c.send(t, map[string]any{"event": "media", "streamSid": s.SID(), "media": map[string]any{"payload": b64(speech[part[0]:part[1]])}})
	}
	c.send(t, map[string]any{"event": "mark", "streamSid": s.SID(), "mark": map[string]any{"name": "a"}})
	c.send(t, map[string]any{"event": "media", "streamSid": s.SID(), "media": map[string]any{"payload": b64(speech[480:])}})
	c.send(t, map[string]any{"event": "mark", "streamSid": s.SID(), "mark": map[string]any{"name": "b"}})
	require.Eventually(t, func() bool { return ph.Pending() == 80*time.Millisecond && s.marksWaiting() == 2 }, 5*time.Second, time.Millisecond)

	// Each step: the pacer sends a frame, the caller's next frame ticks
	// the stream, a key fences what the step sent.
	var outbound []byte
	chunk := 1
	for step := 1; step <= 5; step++ {
		ph.send()
		s.Audio(frame)
		s.Key(dtmf.Event{Digit: '5'})
		var marks []string
		for {
			m := c.next(t)
			seq.check(t, m)
			if m["event"] == "dtmf" {
				require.Equal(t, map[string]any{"track": "inbound_track", "digit": "5"}, m["dtmf"])
				break
			}
			switch m["event"] {
			case "mark":
				marks = append(marks, m["mark"].(map[string]any)["name"].(string))
			case "media":
				med := m["media"].(map[string]any)
				p, err := base64.StdEncoding.DecodeString(med["payload"].(string))
				require.NoError(t, err)
				if med["track"] == "outbound" {
					outbound = append(outbound, p...)
				} else {
					chunk++
					require.Equal(t, strconv.Itoa(chunk), med["chunk"])
				}
			default:
				t.Fatalf("unexpected %v", m)
			}
		}
		switch step {
		case 3:
			require.Equal(t, []string{"a"}, marks, "mark a answers once the 480 bytes before it are sent")
		case 4:
			require.Equal(t, []string{"b"}, marks)
		default:
			require.Empty(t, marks, "step %d", step)
		}
	}
	require.Equal(t, speech, ph.sentBytes(), "the pacer sent the bot's audio as it came")
	require.Equal(t, speech, outbound, "the outbound track is what the caller heard")

	// clear: the queued audio goes at once and its mark comes back.
	c.send(t, map[string]any{"event": "media", "streamSid": s.SID(), "media": map[string]any{"payload": b64(ramp(800, 7))}})
	c.send(t, map[string]any{"event": "mark", "streamSid": s.SID(), "mark": map[string]any{"name": "c"}})
	c.send(t, map[string]any{"event": "clear", "streamSid": s.SID()})
	m = c.nextNot(t)
	seq.check(t, m)
	require.Equal(t, map[string]any{"name": "c"}, m["mark"])
	require.Zero(t, ph.Pending())
	require.Equal(t, 1, ph.flushes)
	// Audio after clear plays (a new item).
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(ramp(160, 9))}})
	require.Eventually(t, func() bool { return ph.Pending() == 20*time.Millisecond }, 5*time.Second, time.Millisecond)

	require.NoError(t, stop())
	require.NoError(t, s.Close())
	for {
		m := c.next(t)
		seq.check(t, m)
		if m["event"] == "stop" {
			require.Equal(t, map[string]any{"accountSid": "team_1", "callSid": ph.id}, m["stop"])
			require.Equal(t, s.SID(), m["streamSid"])
			break
		}
	}
	var ce *websocket.CloseError
	require.ErrorAs(t, <-c.err, &ce)
	require.Equal(t, websocket.CloseNormalClosure, ce.Code)
}

// TestMarkWithoutAudioComesBackAtOnce: a mark with nothing queued before
// it has been played already.
func TestMarkWithoutAudioComesBackAtOnce(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	stop := running(t, s)
	c.send(t, map[string]any{"event": "mark", "mark": map[string]any{"name": "now"}})
	m := c.nextNot(t, "connected", "start")
	require.Equal(t, "mark", m["event"])
	require.Equal(t, map[string]any{"name": "now"}, m["mark"])
	require.NoError(t, stop())
	require.NoError(t, s.Close())
}

// TestMarkAnsweredWithoutCallerAudio: a caller whose audio does not tick
// the stream (on hold, muted) still gets the bot's marks once the pacer
// sent their audio: the run loop looks when the audio is due.
func TestMarkAnsweredWithoutCallerAudio(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	stop := running(t, s)
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(ramp(320, 1))}})
	c.send(t, map[string]any{"event": "mark", "mark": map[string]any{"name": "late"}})
	require.Eventually(t, func() bool { return ph.Pending() == 40*time.Millisecond }, 5*time.Second, time.Millisecond)
	ph.send()
	ph.send()
	m := c.nextNot(t, "connected", "start")
	require.Equal(t, map[string]any{"name": "late"}, m["mark"])
	require.NoError(t, stop())
	require.NoError(t, s.Close())
}

// TestAudioNeverWaitsForTheReader: the caller's frame, on the media
// goroutine that ticks every call of its worker, does not wait while the
// reader holds the stream's mutex (it plays the bot's audio, and its
// thread may be descheduled there): the frame still goes to the bot, and
// the next frame's tick answers the mark whose audio was sent.
func TestAudioNeverWaitsForTheReader(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(ramp(160, 1))}})
	c.send(t, map[string]any{"event": "mark", "mark": map[string]any{"name": "played"}})
	require.Eventually(t, func() bool { return s.marksWaiting() == 1 }, 5*time.Second, time.Millisecond)
	require.True(t, ph.send())

	s.mu.Lock() // the reader, mid-play
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Audio(ramp(160, 0))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.mu.Unlock()
		<-done
		t.Fatal("Audio waited for the stream's mutex")
	}
	s.mu.Unlock()
	m := c.nextNot(t, "connected", "start")
	require.Equal(t, "media", m["event"], "the caller's frame went to the bot")
	require.Equal(t, 1, s.marksWaiting(), "the skipped tick answered nothing")

	s.Audio(ramp(160, 0))
	m = c.nextNot(t, "connected", "start", "media")
	require.Equal(t, map[string]any{"name": "played"}, m["mark"])
	require.NoError(t, s.Close())
}

// TestBotFloodDropsTheOldest: audio faster than real time is bounded by
// max_queue: the oldest goes, the latest plays, and the loss is counted
// in the record.
func TestBotFloodDropsTheOldest(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{MaxQueue: time.Second}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	stop := running(t, s)
	old := bytes.Repeat([]byte{0x11}, 8000)
	latest := bytes.Repeat([]byte{0x22}, 8000)
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(old)}})
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(latest[:4000])}})
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(latest[4000:])}})
	c.send(t, map[string]any{"event": "mark", "mark": map[string]any{"name": "end"}})
	require.Eventually(t, func() bool { return s.waiting() > 0 }, 5*time.Second, time.Millisecond)
	require.Equal(t, time.Second, ph.Pending())
	for range 50 {
		ph.send()
	}
	require.Equal(t, latest, ph.sentBytes())
	s.Audio(ramp(160, 0))
	m := c.nextNot(t, "connected", "start", "media")
	require.Equal(t, map[string]any{"name": "end"}, m["mark"])
	require.NoError(t, stop())
	require.NoError(t, s.Close())
	require.Contains(t, ph.noteTexts(), "stream: the bot sends audio faster than real time; its oldest audio beyond 1s is dropped")
	last := ph.notes[len(ph.notes)-1]
	require.Equal(t, int64(1000), last.Data.(map[string]any)["audio_dropped_ms"])
}

// TestBadMessagesAreRefused: what a bot may send wrong is refused and
// counted, each kind noted once, and the stream goes on.
func TestBadMessagesAreRefused(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	stop := running(t, s)
	for _, bad := range []string{
		`{"event":"media","media":{"payload":"AAA`, // invalid JSON
		`[1,2,3]`,                      // not an object
		`{"event":"dance"}`,            // unknown event
		`{"media":{"payload":"AAAA"}}`, // no event
		`{"event":"media","media":{"payload":"not base64 at all!"}}`, // not base64
		`{"event":"media","media":{"payload":""}}`,                   // no audio
		`{"event":"media"}`, // no media
		`{"event":"media","streamSid":"MZ0","media":{"payload":"AAAA"}}`, // another stream
		`{"event":"mark","mark":{}}`,                                     // no name
		`{"event":"dance"}`,                                              // counted again, noted once
	} {
		c.send(t, bad)
	}
	require.NoError(t, c.c.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3}))
	c.send(t, map[string]any{"event": "media", "media": map[string]any{"payload": b64(ramp(160, 3))}})
	require.Eventually(t, func() bool { return ph.Pending() == 20*time.Millisecond }, 5*time.Second, time.Millisecond, "the stream goes on")
	require.NoError(t, stop())
	require.NoError(t, s.Close())
	last := ph.notes[len(ph.notes)-1]
	require.Equal(t, map[string]int{refusedInvalidJSON: 2, refusedUnknownEvent: 3, refusedBadBase64: 1, refusedNoPayload: 2,
		refusedStreamSid: 1, refusedNoMarkName: 1, refusedBinary: 1}, last.Data.(map[string]any)["refused"])
	n := 0
	for _, text := range ph.noteTexts() {
		if len(text) > 26 && text[:26] == "stream: message refused (u" {
			n++
		}
	}
	require.Equal(t, 1, n, "one note per kind")
}

// TestBotClosingEndsTheCall: the bot's close frame ends the call with the
// reason.
func TestBotClosingEndsTheCall(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, nil)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	require.NoError(t, c.c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")))
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end")
	}
	var he *call.HangupError
	require.ErrorAs(t, err, &he)
	require.Equal(t, "stream closed by the bot", he.Reason)
	require.NoError(t, s.Close())
	require.Contains(t, ph.noteTexts(), "stream ended: the bot closed the stream (1000 bye)")
}

// fakeFallback is a fallback conversation that records what reaches it.
type fakeFallback struct {
	format   media.Format
	prepared bool
	audio    chan []byte
	ran      chan struct{}
	closed   bool
}

func (f *fakeFallback) Conversation(_ context.Context, fm media.Format) (call.Conversation, error) {
	f.format = fm
	return f, nil
}
func (f *fakeFallback) Format() media.Format          { return f.format }
func (f *fakeFallback) Keypad() call.KeypadSettings   { return call.KeypadSettings{} }
func (f *fakeFallback) Recording() bool               { return false }
func (f *fakeFallback) Prepare(context.Context) error { f.prepared = true; return nil }
func (f *fakeFallback) Audio(b []byte)                { f.audio <- append([]byte(nil), b...) }
func (f *fakeFallback) Key(dtmf.Event)                {}
func (f *fakeFallback) Progress(call.Progress)        {}
func (f *fakeFallback) Opened(call.Opening)           {}
func (f *fakeFallback) Close() error                  { f.closed = true; return nil }
func (f *fakeFallback) Run(ctx context.Context) error { close(f.ran); <-ctx.Done(); return nil }
func newFakeFallback() *fakeFallback {
	return &fakeFallback{audio: make(chan []byte, 8), ran: make(chan struct{})}
}
func (f *fakeFallback) waitRun(t *testing.T) {
	t.Helper()
	select {
	case <-f.ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the fallback did not run")
	}
}

// TestBotLeavingHandsTheCallToTheFallback: with a fallback agent, a bot
// that leaves mid-call hands the caller over instead of ending the call.
func TestBotLeavingHandsTheCallToTheFallback(t *testing.T) {
	bot := newTestBot(t)
	ph := newTestPhone(t)
	fb := newFakeFallback()
	s := NewService(Options{}).New(ph, call.StreamTarget{URL: bot.url()}, media.Format{}, fb)
	require.NoError(t, s.Prepare(context.Background()))
	c := bot.accept(t)
	stop := running(t, s)
	c.c.Close()
	fb.waitRun(t)
	require.True(t, fb.prepared)
	require.Equal(t, media.FormatPCMU, fb.format)
	s.Audio(ramp(160, 4))
	require.Equal(t, ramp(160, 4), <-fb.audio)
	require.NoError(t, stop())
	require.NoError(t, s.Close())
	require.True(t, fb.closed)
}

// hangingServer accepts TCP connections and never answers: a bot that
// never completes the upgrade.
func hangingServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

// TestBotThatNeverAnswers: a bot that never answers the upgrade leaves the
// caller an error tone, then the call ends with the reason; a placed call
// fails before its dial; a fallback agent takes the call instead.
func TestBotThatNeverAnswers(t *testing.T) {
	addr := hangingServer(t)
	sv := NewService(Options{ConnectTimeout: 200 * time.Millisecond})
	target := call.StreamTarget{URL: "ws://" + addr + "/media"}

	t.Run("caller hears the tone", func(t *testing.T) {
		ph := newTestPhone(t)
		s := sv.New(ph, target, media.Format{}, nil)
		began := time.Now()
		require.NoError(t, s.Prepare(context.Background()))
		require.Less(t, time.Since(began), 2*time.Second)
		require.Greater(t, ph.Pending(), time.Second, "the tone is queued")
		done := make(chan error, 1)
		go func() { done <- s.Run(context.Background()) }()
		for ph.send() {
		}
		var he *call.HangupError
		require.ErrorAs(t, <-done, &he)
		require.Equal(t, "stream unavailable", he.Reason)
		require.NoError(t, s.Close())
		require.Contains(t, ph.noteTexts(), "stream unavailable: stream: the bot is unreachable: no upgrade within 200ms")
	})
	t.Run("placed call fails", func(t *testing.T) {
		ph := newTestPhone(t)
		ph.info.Direction = call.DirectionOutbound
		s := sv.New(ph, target, media.Format{}, nil)
		err := s.Prepare(context.Background())
		var re *call.RejectError
		require.ErrorAs(t, err, &re)
		require.Equal(t, 503, re.Status)
		require.ErrorIs(t, err, ErrUnreachable)
		require.NoError(t, s.Close())
	})
	t.Run("fallback takes the call", func(t *testing.T) {
		ph := newTestPhone(t)
		fb := newFakeFallback()
		s := sv.New(ph, target, media.Format{}, fb)
		require.NoError(t, s.Prepare(context.Background()))
		require.True(t, fb.prepared)
		require.Zero(t, ph.Pending(), "no tone")
		stop := running(t, s)
		fb.waitRun(t)
		require.NoError(t, stop())
		require.NoError(t, s.Close())
		require.True(t, fb.closed)
	})
}

// TestForbiddenAddresses: a bot on a link-local or metadata address is
// never dialed.
func TestForbiddenAddresses(t *testing.T) {
	sv := NewService(Options{ConnectTimeout: time.Second})
	for _, u := range []string{"ws://169.254.169.254/media", "wss://[fe80::1%25eth0]/x", "ws://metadata.google.internal/"} {
		ph := newTestPhone(t)
		ph.info.Direction = call.DirectionOutbound
		s := sv.New(ph, call.StreamTarget{URL: u}, media.Format{}, nil)
		err := s.Prepare(context.Background())
		require.ErrorIs(t, err, ErrUnreachable, u)
		require.True(t, errors.Is(err, ErrUnreachable))
		require.Contains(t, err.Error(), "link-local and cloud metadata addresses are not allowed", u)
		require.NoError(t, s.Close())
	}
}

// TestStreamInAnotherFormat: a call whose conversation speaks PCM16 at
// 24 kHz (a controller's call sent to a stream) converts once each way.
func TestStreamInAnotherFormat(t *testing.T) {
	c, err := newConverter(media.PCM16(24000), media.FormatPCMU)
	require.NoError(t, err)
	pcm := make([]int16, 480)
	for i := range pcm {
		pcm[i] = int16(8000 * ((i / 12) % 2))
	}
	out := c.toWire(media.AppendPCM16LE(nil, pcm))
	require.Len(t, out, 160, "20 ms at 24 kHz is 160 µ-law bytes")
	back := c.toCall(bytes.Repeat([]byte{0xff}, 160))
	require.Len(t, back, 960, "160 µ-law bytes are 20 ms of PCM16 at 24 kHz")
	same, err := newConverter(media.FormatPCMU, media.FormatPCMU)
	require.NoError(t, err)
	in := ramp(160, 0)
	require.Equal(t, &in[0], &same.toWire(in)[0], "the same format passes through, not even copied")
}
