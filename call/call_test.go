package call

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"switchboard/dtmf"
	"switchboard/media"
)

// fakeLeg records what the Call asks of its phone side.
type fakeLeg struct {
	codec    string
	md       MachineDetection // set: a placed call's leg
	route    Route
	startErr error
	ansErr   error
	ctx      context.Context
	cancel   context.CancelCauseFunc

	mu        sync.Mutex
	sink      LegSink
	opts      LegOptions
	steps     []string
	rejected  []any
	hungUp    string
	played    []int16
	coded     []byte
	closeRuns int
}

func newFakeLeg(codec string, route Route) *fakeLeg {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &fakeLeg{codec: codec, route: route, ctx: ctx, cancel: cancel}
}

func (l *fakeLeg) step(s string) {
	l.mu.Lock()
	l.steps = append(l.steps, s)
	l.mu.Unlock()
}

func (l *fakeLeg) ID() string { return "call-1" }
func (l *fakeLeg) Info() LegInfo {
	info := LegInfo{Kind: "fake", From: "alice", To: "bob", Route: l.route}
	if l.md != "" {
		info.Direction, info.MachineDetection = DirectionOutbound, l.md
	}
	return info
}
func (l *fakeLeg) Context() context.Context { return l.ctx }
func (l *fakeLeg) Rate() int                { return media.ClockRate }
func (l *fakeLeg) Codec() string            { return l.codec }
func (l *fakeLeg) Start(sink LegSink, opts LegOptions) error {
	l.step("start")
	l.mu.Lock()
	l.sink, l.opts = sink, opts
	l.mu.Unlock()
	return l.startErr
}
func (l *fakeLeg) Ring() error { l.step("ring"); return nil }
func (l *fakeLeg) Answer(context.Context) error {
	l.step("answer")
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
func (l *fakeLeg) Play(_ string, pcm []int16) {
	l.mu.Lock()
	l.played = append(l.played, pcm...)
	l.mu.Unlock()
}
func (l *fakeLeg) PlayCoded(_ string, b []byte) {
	l.mu.Lock()
	l.coded = append(l.coded, b...)
	l.mu.Unlock()
}
func (l *fakeLeg) Flush() (string, int)                   { return "", 0 }
func (l *fakeLeg) Pending() time.Duration                 { return 0 }
func (l *fakeLeg) SendDTMF(context.Context, string) error { return nil }
func (l *fakeLeg) Hold(bool)                              {}
func (l *fakeLeg) Stats() media.StatsSnapshot             { return media.StatsSnapshot{PacketsIn: 7} }
func (l *fakeLeg) Close() error {
	l.mu.Lock()
	l.closeRuns++
	l.mu.Unlock()
	return nil
}

// fakeConv is a conversation driven by the test.
type fakeConv struct {
	format     AudioFormat
	keypad     KeypadSettings
	prepareErr error
	run        func(ctx context.Context, p Phone) error

	mu       sync.Mutex
	audio    [][]byte
	keys     []byte
	digits   []string
	closed   int
	progress []Progress
	openings []Opening
}

func (c *fakeConv) Format() AudioFormat                  { return c.format }
func (c *fakeConv) Keypad() KeypadSettings               { return c.keypad }
func (c *fakeConv) Recording() bool                      { return false }
func (c *fakeConv) Prepare(context.Context, Phone) error { return c.prepareErr }
func (c *fakeConv) Progress(p Progress) {
	c.mu.Lock()
	c.progress = append(c.progress, p)
	c.mu.Unlock()
}
func (c *fakeConv) Opened(o Opening) {
	c.mu.Lock()
	c.openings = append(c.openings, o)
	c.mu.Unlock()
}
func (c *fakeConv) Run(ctx context.Context, p Phone) error { return c.run(ctx, p) }
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
func (c *fakeConv) Digits(text string) {
	c.mu.Lock()
	c.digits = append(c.digits, text)
	c.mu.Unlock()
}
func (c *fakeConv) Close() error {
	c.mu.Lock()
	c.closed++
	c.mu.Unlock()
	return nil
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
	opts.SIP.Ports = &media.PortPool{}
	opts.Router = routerFunc(func(context.Context, Phone) (Conversation, error) {
		if routeErr != nil {
			return nil, routeErr
		}
		return conv, nil
	})
	j, _ := opts.Journal.(*testJournal)
	if j == nil {
		j = &testJournal{}
		opts.Journal = j
	}
	var ended *Call
	m, err := NewManager(opts, zerolog.Nop())
	require.NoError(t, err)
	m.Run(leg.ctx, leg, zerolog.Nop())
	ended = j.ended
	require.NotNil(t, ended)
	require.Same(t, ended, j.admitted, "the journal hears of the call from its admission")
	require.Zero(t, m.Active())
	return ended
}

func hangupWith(reason string) func(context.Context, Phone) error {
	return func(context.Context, Phone) error { return Hangup(reason) }
}

// TestRefusals: a router's or a conversation's error refuses the call
// with the status it carries (or 480 when it carries none), a leg that
// cannot start refuses it with its own status and Retry-After; the call
// record says it was rejected and the conversation is closed.
func TestRefusals(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		name     string
		routeErr error
		startErr error
		prepErr  error
		want     []any
	}{
		{"unknown agent", &RejectError{Status: 404, Reason: "Not Found", Err: errors.New("no agent")}, nil, nil, []any{404, "Not Found", time.Duration(0)}},
		{"router failure", errors.New("store down"), nil, nil, []any{500, "Server Internal Error", time.Duration(0)}},
		{"no ports", nil, &RejectError{Status: 503, Reason: "Service Unavailable", RetryAfter: 5 * time.Second}, nil, []any{503, "Service Unavailable", 5 * time.Second}},
		{"engine down", nil, nil, &RejectError{Status: 503, Reason: "Service Unavailable"}, []any{503, "Service Unavailable", time.Duration(0)}},
		{"not ready", nil, nil, errors.New("timeout"), []any{480, "Temporarily Unavailable", time.Duration(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leg := newFakeLeg(EncodingPCMU, Route{AgentID: "ag_1"})
			leg.startErr = tc.startErr
			conv := &fakeConv{format: PCM16(24000), prepareErr: tc.prepErr, run: hangupWith("x")}
			c := runCall(t, leg, conv, tc.routeErr, Options{})
			require.Equal(t, tc.want, leg.rejected)
			s := c.Snapshot()
			require.Equal(t, EndedByRejected, s.EndedBy)
			require.Equal(t, StateEnded, s.State)
			require.Equal(t, 1, leg.closeRuns)
			if tc.routeErr == nil {
				require.Equal(t, 1, conv.closed)
			}
		})
	}
}

// TestLifecycle: ring, start, answer in that order; the conversation's
// hangup reason goes into the BYE and the record; the route names the
// record; the leg is closed once.
func TestLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t)
	leg := newFakeLeg(EncodingPCMU, Route{NumberID: "pn_1", PhoneNumber: "+14155550100", TeamID: "t1", AgentID: "ag_1"})
	conv := &fakeConv{format: PCM16(24000), run: func(_ context.Context, p Phone) error {
		require.Equal(t, StateActive, p.Snapshot().State)
		p.Note(Note{Kind: NoteEvent, Text: "hello"})
		p.Note(Note{Kind: NoteTransfer, Text: "sip:desk@example.com"})
		return Hangup("goodbye")
	}}
	j := &testJournal{}
	c := runCall(t, leg, conv, nil, Options{Journal: j})
	require.EqualValues(t, 2, j.changes.Load(), "the journal hears of the answer and the transfer")
	require.Equal(t, []string{"ring", "start", "answer"}, leg.steps)
	require.Equal(t, "goodbye", leg.hungUp)
	s := c.Snapshot()
	require.Equal(t, EndedByAppliance, s.EndedBy)
	require.Equal(t, "goodbye", s.EndReason)
	require.Equal(t, "agent:ag_1", s.Route)
	require.Equal(t, "pn_1", s.NumberID)
	require.Equal(t, "t1", s.TeamID)
	require.Equal(t, uint64(7), s.Media.PacketsIn)
	require.Len(t, s.Notes, 2)
	require.False(t, s.Answered.IsZero())
	require.Equal(t, 1, leg.closeRuns)
	require.Equal(t, 1, conv.closed)
}

// TestCallerHangsUp: the caller's BYE (the leg's context) ends the call
// as the caller's.
func TestCallerHangsUp(t *testing.T) {
	defer goleak.VerifyNone(t)
	leg := newFakeLeg(EncodingPCMU, Route{AgentID: "ag_1"})
	conv := &fakeConv{format: PCM16(24000), run: func(ctx context.Context, _ Phone) error {
		leg.cancel(errors.New("BYE from the caller"))
		<-ctx.Done()
		return nil
	}}
	c := runCall(t, leg, conv, nil, Options{})
	s := c.Snapshot()
	require.Equal(t, EndedByCaller, s.EndedBy)
	require.Equal(t, "BYE from the caller", s.EndReason)
	require.Empty(t, leg.hungUp)
}

// TestAudioPaths: the conversation gets the leg's bytes untouched when it
// speaks the leg's G.711 (passthrough), G.711 of its own codec when it
// speaks the other one, and 24 kHz PCM16 otherwise; its audio reaches the
// leg the same ways back.
func TestAudioPaths(t *testing.T) {
	defer goleak.VerifyNone(t)
	frame := make([]int16, 160)
	for i := range frame {
		frame[i] = int16(i * 100)
	}
	pcmu := media.PCMU.EncodeFrame(nil, frame)
	for _, tc := range []struct {
		name        string
		format      AudioFormat
		passthrough bool
		check       func(t *testing.T, leg *fakeLeg, conv *fakeConv)
	}{
		{"passthrough", AudioFormat{Encoding: EncodingPCMU, Rate: 8000}, true, func(t *testing.T, leg *fakeLeg, conv *fakeConv) {
			require.Equal(t, [][]byte{pcmu}, conv.audio)
			require.Equal(t, pcmu, leg.coded)
			require.Empty(t, leg.played)
		}},
		{"transcode", AudioFormat{Encoding: EncodingPCMA, Rate: 8000}, false, func(t *testing.T, leg *fakeLeg, conv *fakeConv) {
			require.Equal(t, [][]byte{media.PCMA.EncodeFrame(nil, frame)}, conv.audio)
			require.Len(t, leg.played, 160)
			require.Empty(t, leg.coded)
		}},
		{"pcm16 24k", PCM16(24000), false, func(t *testing.T, leg *fakeLeg, conv *fakeConv) {
			require.Len(t, conv.audio, 1)
			require.Len(t, conv.audio[0], 2*480)
			require.InDelta(t, 160, len(leg.played), 8)
			require.Empty(t, leg.coded)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leg := newFakeLeg(EncodingPCMU, Route{AgentID: "ag_1"})
			conv := &fakeConv{format: tc.format}
			conv.run = func(_ context.Context, p Phone) error {
				if leg.opts.Passthrough {
					leg.sink.Coded(pcmu)
					p.Play("it", pcmu)
				} else {
					leg.sink.Audio(frame)
					out := conv.audio[0]
					if tc.format.Encoding == EncodingPCMA {
						out = media.PCMA.EncodeFrame(nil, frame)
					}
					p.Play("it", out)
				}
				return Hangup("done")
			}
			runCall(t, leg, conv, nil, Options{})
			require.Equal(t, tc.passthrough, leg.opts.Passthrough)
			tc.check(t, leg, conv)
		})
	}
}

// TestLegFormat: a conversation asking for the leg's own format (the line
// test) gets a G.711 leg's bytes passed through, and PCM16 at the rate of a
// leg without G.711, unresampled; Phone.Format says what it got.
func TestLegFormat(t *testing.T) {
	defer goleak.VerifyNone(t)
	frame := make([]int16, 160)
	for i := range frame {
		frame[i] = int16(i * 100)
	}
	pcma := media.PCMA.EncodeFrame(nil, frame)
	for _, tc := range []struct {
		codec string
		want  AudioFormat
	}{
		{EncodingPCMA, AudioFormat{Encoding: EncodingPCMA, Rate: 8000}},
		{"", PCM16(8000)},
	} {
		t.Run(tc.want.Encoding, func(t *testing.T) {
			leg := newFakeLeg(tc.codec, Route{AgentID: "ag_1"})
			conv := &fakeConv{format: LegFormat}
			var got AudioFormat
			conv.run = func(_ context.Context, p Phone) error {
				got = p.Format()
				if leg.opts.Passthrough {
					leg.sink.Coded(pcma)
				} else {
					leg.sink.Audio(frame)
				}
				p.Play("it", conv.audio[0])
				return Hangup("done")
			}
			runCall(t, leg, conv, nil, Options{})
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.codec != "", leg.opts.Passthrough)
			if tc.codec != "" {
				require.Equal(t, [][]byte{pcma}, conv.audio)
				require.Equal(t, pcma, leg.coded)
				return
			}
			require.Equal(t, [][]byte{media.AppendPCM16LE(nil, frame)}, conv.audio)
			require.Equal(t, frame, leg.played, "nothing resampled")
		})
	}
}

// TestInbandPrecedence: the number's dtmf_inband wins over the
// conversation's, which wins over the appliance's.
func TestInbandPrecedence(t *testing.T) {
	for _, tc := range []struct {
		appliance, conv, number, want Inband
	}{
		{"", "", "", InbandAuto},
		{InbandOff, "", "", InbandOff},
		{InbandOff, InbandOn, "", InbandOn},
		{InbandOff, InbandOn, InbandAuto, InbandAuto},
	} {
		leg := newFakeLeg(EncodingPCMU, Route{AgentID: "ag_1", DTMFInband: tc.number})
		conv := &fakeConv{format: PCM16(24000), keypad: KeypadSettings{Inband: tc.conv}, run: hangupWith("x")}
		runCall(t, leg, conv, nil, Options{Inband: tc.appliance})
		require.Equal(t, tc.want, leg.opts.Inband, "%+v", tc)
	}
}

// TestKeypad: keys reach the conversation one by one and as one message
// flushed on #, or after the idle time; each key is in the record.
func TestKeypad(t *testing.T) {
	defer goleak.VerifyNone(t)
	leg := newFakeLeg(EncodingPCMU, Route{AgentID: "ag_1"})
	conv := &fakeConv{format: PCM16(24000)}
	key := func(d byte, at time.Time) { leg.sink.Key(dtmf.Event{Digit: d, Source: dtmf.SourceINFO, At: at}) }
	conv.run = func(context.Context, Phone) error {
		now := time.Now()
		key('1', now)
		key('2', now.Add(300*time.Millisecond))
		key('#', now.Add(600*time.Millisecond))
		key('4', now.Add(900*time.Millisecond))
		require.Eventually(t, func() bool {
			conv.mu.Lock()
			defer conv.mu.Unlock()
			return len(conv.digits) == 2
		}, 2*time.Second, 5*time.Millisecond)
		return Hangup("done")
	}
	c := runCall(t, leg, conv, nil, Options{DTMFIdle: 100 * time.Millisecond})
	require.Equal(t, []string{"The caller entered 12 on the phone keypad and pressed # to finish.",
		"The caller entered 4 on the phone keypad."}, conv.digits)
	require.Equal(t, []byte("12#4"), conv.keys)
	var dtmfNotes int
	for _, n := range c.Snapshot().Notes {
		if n.Kind == NoteDTMF {
			dtmfNotes++
		}
	}
	require.Equal(t, 4, dtmfNotes)
}
