package stream

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"switchboard/call"
	"switchboard/media"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testPhone is the call a stream sees in these tests: its Speaker is a
// real µ-law playout (the caller's leg's queue), and the test plays the
// pacer's part with send, frame by frame.
type testPhone struct {
	id    string
	route call.Route
	info  call.LegInfo
	q     *media.Playout
	w     *media.Writer
	pcm   *media.Writer

	mu      sync.Mutex
	notes   []call.Note
	sent    []byte // what the "pacer" took from the queue
	hangups []string
	flushes int
}

func newTestPhone(t *testing.T) *testPhone {
	t.Helper()
	q := media.NewCodedPlayout(media.PCMU)
	w, err := media.NewWriter(q, media.FormatPCMU, media.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := media.NewWriter(q, media.PCM16(8000), media.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &testPhone{id: "9b2f4f2e-7c41-4d55-9a43-1d2a4c3e5f60", route: call.Route{TeamID: "team_1", NumberID: "pn_1"}, q: q, w: w, pcm: pw}
}

func (p *testPhone) ID() string                    { return p.id }
func (p *testPhone) Route() call.Route             { return p.route }
func (p *testPhone) Info() call.LegInfo            { return p.info }
func (p *testPhone) Logger() zerolog.Logger        { return zerolog.Nop() }
func (p *testPhone) Context() context.Context      { return context.Background() }
func (p *testPhone) Snapshot() call.Snapshot       { return call.Snapshot{ID: p.id} }
func (p *testPhone) MediaHealth() call.MediaHealth { return call.MediaHealth{} }
func (p *testPhone) Format() media.Format          { return media.FormatPCMU }
func (p *testPhone) Play(id string, b []byte)      { p.w.Write(id, b) }
func (p *testPhone) PlayPCM(id string, b []byte)   { p.pcm.Write(id, b) }
func (p *testPhone) Pending() time.Duration        { return p.q.Len() }
func (p *testPhone) Trim(d time.Duration) time.Duration {
	return p.q.Trim(d)
}
func (p *testPhone) Flush() (string, int) {
	p.mu.Lock()
	p.flushes++
	p.mu.Unlock()
	return p.q.Flush()
}
func (p *testPhone) Hangup(reason string, _ ...call.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hangups = append(p.hangups, reason)
}
func (p *testPhone) Transfer(context.Context, string, func(int), ...call.Header) error {
	return call.ErrNotSupported
}
func (p *testPhone) SendDTMF(context.Context, string) error { return call.ErrNotSupported }
func (p *testPhone) Note(n call.Note) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, n)
}

// send is the pacer: it takes one 20 ms frame from the queue (silence
// when it runs short) and reports whether it held audio.
func (p *testPhone) send() bool {
	b, ok := p.q.ReadCoded(nil, 160, media.PCMU)
	if ok {
		p.mu.Lock()
		p.sent = append(p.sent, b...)
		p.mu.Unlock()
	}
	return ok
}

func (p *testPhone) sentBytes() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.sent...)
}

func (p *testPhone) noteTexts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, n := range p.notes {
		out = append(out, n.Text)
	}
	return out
}

// The call's parties: a stream-routed call's conversation never hands
// its caller on.
func (p *testPhone) Caller() *call.Party { return nil }
func (p *testPhone) Join(call.Leg, call.Inband) (*call.Party, error) {
	return nil, call.ErrNotSupported
}
func (p *testPhone) Leave(*call.Party, string) error     { return call.ErrNotSupported }
func (p *testPhone) Hear(*call.Party, call.Source) error { return call.ErrNotSupported }
func (p *testPhone) ConversationHears(*call.Party) error { return call.ErrNotSupported }

var _ call.Phone = (*testPhone)(nil)
