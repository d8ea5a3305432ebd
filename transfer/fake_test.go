package transfer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/dtmf"
	"switchboard/media"
	"switchboard/transfer"
)

// wire keeps what a fake leg's media session sends.
type wire struct {
	mu   sync.Mutex
	sent []byte
}

func (w *wire) WriteRTP(_ *rtp.Header, payload []byte) error {
	w.mu.Lock()
	w.sent = append(w.sent, payload...)
	w.mu.Unlock()
	return nil
}

func (w *wire) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.sent...)
}

// fakeLeg is a leg whose media is a real media.Session on a fake wire.
// Its Answer waits for answer (nil: answers at once) and returns ansErr;
// its Transfer (REFER) plays refer.
type fakeLeg struct {
	id     string
	kind   string
	ctx    context.Context
	cancel context.CancelCauseFunc
	wire   wire

	answer chan struct{}
	ansErr error
	// byeLost, when set, keeps Hangup waiting until it is closed (or its
	// context ends): a BYE nobody answers.
	byeLost chan struct{}
	ring    bool
	refer   func(ctx context.Context, target string, progress func(int)) error

	mu       sync.Mutex
	sink     call.LegSink
	sess     *media.Session
	hungUp   string
	closed   int
	referred []string
	seq      uint16
	ts       uint32
}

func newFakeLeg(id string) *fakeLeg {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &fakeLeg{id: id, kind: "sip", ctx: ctx, cancel: cancel}
}

func (l *fakeLeg) ID() string { return l.id }
func (l *fakeLeg) Info() call.LegInfo {
	return call.LegInfo{Kind: l.kind, From: "alice", To: "bob", Route: call.Route{AgentID: "ag", TeamID: "team", PhoneNumber: "+14155550100"}}
}
func (l *fakeLeg) Context() context.Context { return l.ctx }
func (l *fakeLeg) Start(sink call.LegSink, opts call.LegOptions) error {
	sess, err := media.NewSession(nil, media.SessionOptions{Codec: media.PCMU, Rate: opts.Rate, Transport: &l.wire, Tap: opts.Tap,
		JitterDelay: 60 * time.Millisecond})
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.sink, l.sess = sink, sess
	l.mu.Unlock()
	return nil
}
func (l *fakeLeg) Audio() call.Audio {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess
}
func (l *fakeLeg) Ring() error { return nil }
func (l *fakeLeg) Answer(ctx context.Context) error {
	if l.ring {
		l.mu.Lock()
		sink := l.sink
		l.mu.Unlock()
		sink.Ringing()
	}
	if l.answer != nil {
		select {
		case <-l.answer:
		case <-ctx.Done():
			l.cancel(errors.New("canceled"))
			return &call.DialError{Progress: call.ProgressCanceled, Reason: "canceled while ringing", Err: ctx.Err()}
		case <-l.ctx.Done():
			return &call.DialError{Progress: call.ProgressCanceled, Reason: "canceled while ringing"}
		}
	}
	if l.ansErr != nil {
		l.cancel(l.ansErr)
	}
	return l.ansErr
}
func (l *fakeLeg) Reject(int, string, time.Duration) error { return nil }
func (l *fakeLeg) Hangup(ctx context.Context, reason string, _ ...call.Header) error {
	l.mu.Lock()
	if l.hungUp == "" {
		l.hungUp = reason
	}
	l.mu.Unlock()
	l.cancel(errors.New("hung up: " + reason))
	if l.byeLost != nil {
		select {
		case <-l.byeLost:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
func (l *fakeLeg) Transfer(ctx context.Context, target string, progress func(int), _ ...call.Header) error {
	l.mu.Lock()
	l.referred = append(l.referred, target)
	l.mu.Unlock()
	if l.refer == nil {
		return call.ErrNotSupported
	}
	return l.refer(ctx, target, progress)
}
func (l *fakeLeg) SendDTMF(context.Context, string) error { return nil }
func (l *fakeLeg) Hold(bool)                              {}
func (l *fakeLeg) Stats() media.StatsSnapshot             { return media.StatsSnapshot{} }
func (l *fakeLeg) Close() error {
	l.mu.Lock()
	l.closed++
	sess := l.sess
	l.mu.Unlock()
	if sess != nil {
		return sess.Close()
	}
	return nil
}

// Replaces names the leg's dialog (transfer.Leg).
func (l *fakeLeg) Replaces() string { return l.id + ";to-tag=b;from-tag=a" }

// key presses a key on the leg.
func (l *fakeLeg) key(d byte) {
	l.mu.Lock()
	sink := l.sink
	l.mu.Unlock()
	sink.Key(dtmf.Event{Digit: d, Source: dtmf.SourceINFO, At: time.Now()})
}

// talk sends pcm (8 kHz) as the leg's voice in real time, until stop.
func (l *fakeLeg) talk(pcm []int16, stop <-chan struct{}) {
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	for off := 0; off+160 <= len(pcm); off += 160 {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		l.mu.Lock()
		sess := l.sess
		l.seq++
		l.ts += 160
		h := rtp.Header{Version: 2, PayloadType: media.PCMU.PayloadType, SequenceNumber: l.seq, Timestamp: l.ts, SSRC: 9}
		l.mu.Unlock()
		sess.Receive(&rtp.Packet{Header: h, Payload: media.PCMU.EncodeFrame(nil, pcm[off:off+160])}, time.Now())
	}
}

func (l *fakeLeg) state() (hungUp string, closed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hungUp, l.closed
}

// dialer places fake human legs.
type dialer struct {
	mu      sync.Mutex
	next    []*fakeLeg
	placed  []*fakeLeg
	targets []transfer.Target
	opts    []transfer.DialOptions
	refuse  error
}

func (d *dialer) Resolve(_ context.Context, route call.Route, target string) (transfer.Target, error) {
	if d.refuse != nil {
		return transfer.Target{}, d.refuse
	}
	return transfer.Target{URI: target, From: route.PhoneNumber, Route: route}, nil
}

func (d *dialer) Dial(_ context.Context, t transfer.Target, o transfer.DialOptions) (transfer.Leg, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.targets, d.opts = append(d.targets, t), append(d.opts, o)
	if len(d.next) == 0 {
		return nil, errors.New("no leg")
	}
	l := d.next[0]
	d.next = d.next[1:]
	d.placed = append(d.placed, l)
	return l, nil
}

// voice renders text as a second of a tone per ten characters.
type voice struct{}

func (voice) Render(_ context.Context, text, _ string, rate int) ([]byte, error) {
	n := rate * (len(text)/10 + 1) / 4
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(4000 * ((i/8)%2*2 - 1))
	}
	return media.AppendPCM16LE(nil, pcm), nil
}

// reporter keeps the steps of a transfer.
type reporter struct {
	mu    sync.Mutex
	steps []transfer.Update
}

func (r *reporter) Update(u transfer.Update) {
	r.mu.Lock()
	r.steps = append(r.steps, u)
	r.mu.Unlock()
}

func (r *reporter) statuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.steps {
		out = append(out, string(u.Status))
	}
	return out
}

// conv is a conversation that runs the test's function after the answer.
type conv struct {
	run   func(ctx context.Context, p call.Phone) error
	phone call.Phone
	mu    sync.Mutex
	heard int
}

func (c *conv) Format() media.Format          { return media.FormatPCMU }
func (c *conv) Keypad() call.KeypadSettings   { return call.KeypadSettings{} }
func (c *conv) Recording() bool               { return false }
func (c *conv) Prepare(context.Context) error { return nil }
func (c *conv) Key(dtmf.Event)                {}
func (c *conv) Progress(call.Progress)        {}
func (c *conv) Opened(call.Opening)           {}
func (c *conv) Close() error                  { return nil }
func (c *conv) Run(ctx context.Context) error { return c.run(ctx, c.phone) }
func (c *conv) Audio([]byte)                  { c.mu.Lock(); c.heard++; c.mu.Unlock() }
func (c *conv) heardFrames() int              { c.mu.Lock(); defer c.mu.Unlock(); return c.heard }

type router struct{ c *conv }

func (r router) Conversation(_ context.Context, p call.Phone) (call.Conversation, error) {
	r.c.phone = p
	return r.c, nil
}

// runCall runs a call on caller whose conversation runs f, and waits for
// its end.
func runCall(t *testing.T, caller *fakeLeg, f func(ctx context.Context, p call.Phone) error) {
	t.Helper()
	runCallWith(t, caller, &conv{run: f})
}

// runCallWith runs a call on caller with the conversation c.
func runCallWith(t *testing.T, caller *fakeLeg, c *conv) {
	t.Helper()
	m, err := call.NewManager(call.Options{Router: router{c}}, zerolog.Nop())
	require.NoError(t, err)
	m.Run(caller.ctx, caller, zerolog.Nop())
	require.Zero(t, m.Active())
}

// newService is a service over d with the fake voice and short timers.
func newService(t *testing.T, d *dialer) *transfer.Service {
	t.Helper()
	s, err := transfer.NewService(transfer.Options{Dialer: d, Voice: voice{}, AcceptTimeout: 700 * time.Millisecond,
		ReferNotifyTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	return s
}
