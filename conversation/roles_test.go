package conversation

import (
	"context"
	"sync"
	"time"

	"switchboard/call"
	"switchboard/media"
	"switchboard/realtime"
)

// Tiny recorders of the call's roles (call.Speaker, call.Controls,
// call.Record) and of the session's Send: the bridge's concerns are
// tested with these, without a phone or a session.

// speakerRec is a call.Speaker: it keeps what it was asked to play and
// answers Flush and Pending with what the test set.
type speakerRec struct {
	mu        sync.Mutex
	plays     []string // item ids, in order
	flushes   int
	flushItem string // what Flush reports as playing
	flushMs   int
	pending   time.Duration
	perPlay   time.Duration // each play adds this much to pending
}

func (s *speakerRec) Format() media.Format { return media.PCM16(modelRate) }
func (s *speakerRec) Play(item string, _ []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plays = append(s.plays, item)
	s.pending += s.perPlay
}
func (s *speakerRec) PlayPCM(item string, b []byte) { s.Play(item, b) }
func (s *speakerRec) Flush() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
	return s.flushItem, s.flushMs
}
func (s *speakerRec) Pending() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

func (s *speakerRec) played() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.plays...)
}

func (s *speakerRec) flushed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}

// controlsRec is a call.Controls: it keeps each request and answers a
// transfer with transferErr (after release is closed, when set).
type controlsRec struct {
	mu          sync.Mutex
	hangups     []string
	transfers   []string // target URIs
	headers     [][]call.Header
	digits      []string
	transferErr error
	dtmfErr     error
	release     chan struct{}
}

func (c *controlsRec) Hangup(reason string, _ ...call.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hangups = append(c.hangups, reason)
}

func (c *controlsRec) Transfer(ctx context.Context, target string, _ func(int), hs ...call.Header) error {
	c.mu.Lock()
	c.transfers = append(c.transfers, target)
	c.headers = append(c.headers, hs)
	release, err := c.release, c.transferErr
	c.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (c *controlsRec) SendDTMF(_ context.Context, digits string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.digits = append(c.digits, digits)
	return c.dtmfErr
}

func (c *controlsRec) snapshot() (hangups, transfers, digits []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.hangups...), append([]string(nil), c.transfers...), append([]string(nil), c.digits...)
}

// recordRec is a call.Record keeping the notes.
type recordRec struct {
	mu    sync.Mutex
	notes []call.Note
}

func (r *recordRec) Note(n call.Note) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, n)
}

// kinds lists the notes as kind[/role]: text.
func (r *recordRec) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.notes))
	for _, n := range r.notes {
		k := n.Kind
		if n.Role != "" {
			k += "/" + n.Role
		}
		out = append(out, k+": "+n.Text)
	}
	return out
}

// sentRec is a sendFunc keeping what was sent.
type sentRec struct {
	mu  sync.Mutex
	evs []realtime.Event
}

func (s *sentRec) send(_ context.Context, ev realtime.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

// types lists the events sent by type, and takes them.
func (s *sentRec) take() []realtime.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.evs
	s.evs = nil
	return evs
}

// typesOf names events by their type.
func typesOf(evs []realtime.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.EventType())
	}
	return out
}

// spawnNow runs a concern's goroutine body at once, on the test's
// goroutine: its result is on the concern's channel when spawn returns.
func spawnNow(_ string, f func()) { f() }

// spawnLater keeps a concern's goroutine bodies for the test to run.
type spawnLater struct {
	mu  sync.Mutex
	fns []func()
}

func (s *spawnLater) spawn(_ string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fns = append(s.fns, f)
}

func (s *spawnLater) take() []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	fns := s.fns
	s.fns = nil
	return fns
}
