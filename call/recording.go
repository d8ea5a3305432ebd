package call

import (
	"sync/atomic"
	"time"

	"switchboard/media"
)

// Recorder starts the recording of calls (package recording makes one).
// A call is recorded when its number or its conversation asks for it.
type Recorder interface {
	// Start begins recording the call on p at its answer. The recording
	// is a media.Tap fed by the leg's media goroutine; redact says keys
	// will be redacted (the recording then holds its audio back long
	// enough for Redact to reach it).
	Start(p Phone, redact bool) (Recording, error)
}

// Recording is one call's recording while it is written.
type Recording interface {
	media.Tap
	// Redact keeps both channels silent over [from, to): a key the caller
	// pressed under the redact policy leaves no tone in the file.
	Redact(from, to time.Time)
	// Close finishes the file; it runs once, when the call has ended.
	Close() error
}

// callTap joins a call's taps: its health, and its recording when one
// runs. It is what the leg's media goroutine feeds.
type callTap struct {
	h   *health
	rec *atomic.Pointer[recBox]
	// mix are the mixers of the parties that listen to the caller's line
	// (FromMix).
	mix *atomic.Pointer[mixSet]
}

// mixSet is the call's mixers, replaced whole on every change.
type mixSet struct{ ms []*media.Mixer }

type recBox struct{ r Recording }

// Inbound feeds the caller's frame to every tap (media.Tap).
func (t callTap) Inbound(f media.Frame) {
	t.h.Inbound(f)
	if b := t.rec.Load(); b != nil {
		b.r.Inbound(f)
	}
	if s := t.mix.Load(); s != nil {
		for _, m := range s.ms {
			m.Inbound(f)
		}
	}
}

// Outbound feeds the frame sent to every tap (media.Tap).
func (t callTap) Outbound(f media.Frame) {
	t.h.Outbound(f)
	if b := t.rec.Load(); b != nil {
		b.r.Outbound(f)
	}
	if s := t.mix.Load(); s != nil {
		for _, m := range s.ms {
			m.Outbound(f)
		}
	}
}

// startRecording begins the call's recording at its answer; a recording
// that cannot start leaves the call running unrecorded (logged, noted).
func (c *Call) startRecording() {
	r, err := c.m.opts.Recorder.Start(c, c.policy.Redacted())
	if err != nil {
		c.log.Error().Err(err).Msg("recording not started")
		c.Note(Note{Kind: NoteEvent, Text: "recording failed: " + err.Error()})
		return
	}
	c.rec.Store(&recBox{r})
	c.log.Info().Msg("recording")
}

// stopRecording finishes the recording once the media stopped.
func (c *Call) stopRecording() {
	b := c.rec.Load()
	if b == nil {
		return
	}
	if err := b.r.Close(); err != nil {
		c.log.Error().Err(err).Msg("recording not finished")
	}
}

// redactKey keeps a key's tone out of the recording (redact policy). The
// window covers the key from a little before it was seen to well after:
// the recording holds audio back long enough for this to reach it.
func (c *Call) redactKey(at time.Time, d time.Duration) {
	b := c.rec.Load()
	if b == nil || !c.policy.Redacted() {
		return
	}
	end := at.Add(d)
	if now := time.Now(); now.After(end) {
		end = now
	}
	b.r.Redact(at.Add(-redactBefore), end.Add(redactAfter))
}

// The margins of a redacted key: tone detection and RFC 4733 events lag
// the tone's start by up to a few frames, and an event's first packet
// rarely knows how long the key will be held.
const (
	redactBefore = 100 * time.Millisecond
	redactAfter  = 500 * time.Millisecond
)
