package call

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/dtmf"
	"switchboard/media"
)

// wire is a fake leg's transport: it keeps the payloads its media session
// sends.
type wire struct {
	mu   sync.Mutex
	sent []byte
	pkts int
}

func (w *wire) WriteRTP(_ *rtp.Header, payload []byte) error {
	w.mu.Lock()
	w.sent = append(w.sent, payload...)
	w.pkts++
	w.mu.Unlock()
	return nil
}

func (w *wire) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.sent...)
}

// fakeLeg is a leg whose media is a real media.Session on a fake wire:
// the test sends it RTP (send) and reads what the call sent (wire).
type fakeLeg struct {
	id       string
	codec    media.Codec
	md       MachineDetection // set: a placed call's leg
	route    Route
	startErr error
	ansErr   error
	ctx      context.Context
	cancel   context.CancelCauseFunc
	wire     wire
	// sched runs the leg's session (nil: media's shared scheduler); a
	// test in a synctest bubble gives its legs one of the bubble.
	sched *media.Scheduler
	// answered, when set, makes the leg a placed one: its session starts
	// deferred (codec offered first, PCM at the call's rate) and its
	// answer settles this codec, as sipleg's placed legs do.
	answered media.Codec

	mu        sync.Mutex
	sink      LegSink
	opts      LegOptions
	sess      *media.Session
	steps     []string
	rejected  []any
	hungUp    string
	dtmf      []string
	closeRuns int
	seq       uint16
	ts        uint32
}

func newFakeLeg(codec media.Codec, route Route) *fakeLeg {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &fakeLeg{id: "call-1", codec: codec, route: route, ctx: ctx, cancel: cancel}
}

func (l *fakeLeg) step(s string) {
	l.mu.Lock()
	l.steps = append(l.steps, s)
	l.mu.Unlock()
}

func (l *fakeLeg) ID() string { return l.id }
func (l *fakeLeg) Info() LegInfo {
	info := LegInfo{Kind: "fake", From: "alice", To: "bob", Route: l.route}
	if l.md != "" {
		info.Direction, info.MachineDetection = DirectionOutbound, l.md
	}
	return info
}
func (l *fakeLeg) Context() context.Context { return l.ctx }
func (l *fakeLeg) Start(sink LegSink, opts LegOptions) error {
	l.step("start")
	if l.startErr != nil {
		return l.startErr
	}
	sess, err := media.NewSession(nil, media.SessionOptions{Codec: l.codec, Rate: opts.Rate, Transport: &l.wire, Tap: opts.Tap, Deferred: l.answered.Name != "",
		JitterDelay: 80 * time.Millisecond, Scheduler: l.sched}) // room for the test's senders, which sleep between frames
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.sink, l.opts, l.sess = sink, opts, sess
	l.mu.Unlock()
	return nil
}
func (l *fakeLeg) Audio() Audio {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess
}
func (l *fakeLeg) Ring() error { l.step("ring"); return nil }
func (l *fakeLeg) Answer(context.Context) error {
	l.step("answer")
	if l.ansErr == nil && l.answered.Name != "" {
		return l.Audio().(*media.Session).SettleCodec(l.answered, media.EncoderOptions{})
	}
	return l.ansErr
}
func (l *fakeLeg) Reject(status int, reason string, retryAfter time.Duration) error {
	l.step("reject")
	l.mu.Lock()
	l.rejected = []any{status, reason, retryAfter}
	l.mu.Unlock()
	l.cancel(errors.New("rejected"))
	return nil
}
func (l *fakeLeg) Hangup(_ context.Context, reason string, _ ...Header) error {
	l.mu.Lock()
	if l.hungUp == "" {
		l.hungUp = reason
	}
	l.mu.Unlock()
	l.cancel(errors.New("hung up"))
	return nil
}
func (l *fakeLeg) Transfer(context.Context, string, func(int), ...Header) error { return nil }
func (l *fakeLeg) SendDTMF(_ context.Context, d string) error {
	l.mu.Lock()
	l.dtmf = append(l.dtmf, d)
	l.mu.Unlock()
	return nil
}
func (l *fakeLeg) Hold(bool) {}
func (l *fakeLeg) Stats() media.StatsSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil {
		return media.StatsSnapshot{}
	}
	return l.sess.Stats()
}
func (l *fakeLeg) Close() error {
	l.mu.Lock()
	l.closeRuns++
	sess := l.sess
	l.mu.Unlock()
	if sess != nil {
		return sess.Close()
	}
	return nil
}

// send hands the leg's session one RTP packet of payload (a frame of the
// party's voice).
func (l *fakeLeg) send(payload []byte) {
	l.mu.Lock()
	sess := l.sess
	l.seq++
	l.ts += uint32(len(payload))
	h := rtp.Header{Version: 2, PayloadType: l.codec.PayloadType, SequenceNumber: l.seq, Timestamp: l.ts, SSRC: 7}
	l.mu.Unlock()
	sess.Receive(&rtp.Packet{Header: h, Payload: payload}, time.Now())
}

// taken counts the frames the leg's session handed on since its first
// packet (played, concealed or silence): its frame clock.
func (l *fakeLeg) taken() uint64 {
	s := l.Stats()
	return s.Played + s.Concealed + s.Silenced
}

// key presses a key on the leg.
func (l *fakeLeg) key(d byte) {
	l.mu.Lock()
	sink := l.sink
	l.mu.Unlock()
	sink.Key(dtmf.Event{Digit: d, Source: dtmf.SourceINFO, At: time.Now()})
}

// heard waits until the leg sent want on its wire, frame after frame
// (a frame of silence between two aside: see sounding).
func (l *fakeLeg) heard(t *testing.T, want []byte) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return bytes.Contains(sounding(l.wire.bytes()), want) }, 3*time.Second, 5*time.Millisecond) {
		w := l.wire.bytes()
		var layout []string
		for k := 0; k+160 <= len(w); k += 160 {
			fr, tag := w[k:k+160], "?"
			for i := 0; i+160 <= len(want); i += 160 {
				if bytes.Equal(fr, want[i:i+160]) {
					tag = fmt.Sprint(i / 160)
				}
			}
			if fr[0] == fr[159] && fr[0] == fr[80] {
				tag = "_"
			}
			layout = append(layout, tag)
		}
		t.Fatalf("%s did not send %d bytes %x...: %v", l.id, len(want), want[:8], layout)
	}
}

// sounding is a wire's 20 ms frames without its silent ones: a frame
// that reaches a relay late (a loaded machine's sleep overshoots) leaves
// the playout a frame of silence, which a phone's jitter would too; what
// a test asserts is that every frame arrives whole and in order.
func sounding(w []byte) []byte {
	out := make([]byte, 0, len(w))
	for k := 0; k+160 <= len(w); k += 160 {
		if fr := w[k : k+160]; !(fr[0] == fr[159] && fr[0] == fr[80]) {
			out = append(out, fr...)
		}
	}
	return out
}

// fakeConv is a conversation driven by the test.
type fakeConv struct {
	format     media.Format
	keypad     KeypadSettings
	prepareErr error
	prepare    func(p Phone)
	run        func(ctx context.Context, p Phone) error
	phone      Phone

	mu       sync.Mutex
	audio    [][]byte
	keys     []byte
	closed   int
	progress []Progress
	openings []Opening
	// heardAtOpen is how much audio the conversation had heard when it
	// was told to speak first (a placed call's opening).
	heardAtOpen int
}

func (c *fakeConv) Format() media.Format   { return c.format }
func (c *fakeConv) Keypad() KeypadSettings { return c.keypad }
func (c *fakeConv) Recording() bool        { return false }
func (c *fakeConv) Prepare(context.Context) error {
	if c.prepare != nil {
		c.prepare(c.phone)
	}
	return c.prepareErr
}
func (c *fakeConv) Progress(p Progress) {
	c.mu.Lock()
	c.progress = append(c.progress, p)
	c.mu.Unlock()
}
func (c *fakeConv) Opened(o Opening) {
	c.mu.Lock()
	c.openings = append(c.openings, o)
	c.heardAtOpen = len(c.audio)
	c.mu.Unlock()
}
func (c *fakeConv) Run(ctx context.Context) error { return c.run(ctx, c.phone) }
func (c *fakeConv) Audio(b []byte) {
	c.mu.Lock()
	c.audio = append(c.audio, append([]byte(nil), b...))
	c.mu.Unlock()
}
func (c *fakeConv) Key(ev dtmf.Event) {
	c.mu.Lock()
	c.keys = append(c.keys, ev.Digit)
	c.mu.Unlock()
}
func (c *fakeConv) Close() error {
	c.mu.Lock()
	c.closed++
	c.mu.Unlock()
	return nil
}

// heard is what the conversation heard so far, joined.
func (c *fakeConv) heard() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.audio, nil)
}

type routerFunc func(ctx context.Context, p Phone) (Conversation, error)

func (f routerFunc) Conversation(ctx context.Context, p Phone) (Conversation, error) {
	return f(ctx, p)
}

// testJournal keeps what a call's journal was told.
type testJournal struct {
	admitted, ended *Call
	changes         atomic.Int32
}

func (j *testJournal) Admitted(c *Call) { j.admitted = c }
func (j *testJournal) Changed(*Call)    { j.changes.Add(1) }
func (j *testJournal) Ended(c *Call)    { j.ended = c }

// runCall runs one call on leg with conv (or the router's error) and
// returns the finished call.
func runCall(t *testing.T, leg *fakeLeg, conv *fakeConv, routeErr error, opts Options) *Call {
	t.Helper()
	opts.Router = routerFunc(func(_ context.Context, p Phone) (Conversation, error) {
		if routeErr != nil {
			return nil, routeErr
		}
		conv.phone = p
		return conv, nil
	})
	j, _ := opts.Journal.(*testJournal)
	if j == nil {
		j = &testJournal{}
		opts.Journal = j
	}
	m, err := NewManager(opts, zerolog.Nop())
	require.NoError(t, err)
	m.Run(leg.ctx, leg, zerolog.Nop())
	ended := j.ended
	require.NotNil(t, ended)
	require.Same(t, ended, j.admitted, "the journal hears of the call from its admission")
	require.Zero(t, m.Active())
	return ended
}

func hangupWith(reason string) func(context.Context, Phone) error {
	return func(context.Context, Phone) error { return Hangup(reason) }
}
