package call

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"switchboard/amd"
	"switchboard/media"
)

// Directions of a call (LegInfo.Direction, the record's direction).
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
)

// MachineDetection is a placed call's answering-machine detection.
type MachineDetection string

// Machine detection modes.
const (
	// MachineDetectionOff: no verdict; the conversation still speaks
	// only once the callee's greeting is over (or they stayed silent).
	MachineDetectionOff MachineDetection = "off"
	// MachineDetectionDetect: the verdict goes to the record, the
	// conversation and the webhook; on a machine the conversation speaks
	// after the beep (a message).
	MachineDetectionDetect MachineDetection = "detect"
	// MachineDetectionHangup: detect, and hang up on a machine.
	MachineDetectionHangup MachineDetection = "hangup_on_machine"
)

// Steps of a placed call's dial (Progress.Status, the record's progress).
const (
	ProgressDialing  = "dialing"
	ProgressRinging  = "ringing"
	ProgressAnswered = "answered"
	ProgressBusy     = "busy"
	ProgressNoAnswer = "no-answer"
	ProgressFailed   = "failed"
	ProgressCanceled = "canceled"
	// ProgressDetected reports the machine detection's verdict
	// (Progress.AnsweredBy); the record's progress stays answered.
	ProgressDetected = "detected"
)

// Who answered a placed call (the machine detection's verdict).
const (
	AnsweredByHuman   = "human"
	AnsweredByMachine = "machine"
	AnsweredByUnknown = "unknown"
)

// EndedByCallee is the ended_by of a placed call that its callee ended:
// BYE, or a refusal (busy, declined, no answer).
const EndedByCallee = "callee"

// Progress is one step of a placed call's dial, or the machine
// detection's verdict (Status ProgressDetected).
type Progress struct {
	Status string
	// SIPStatus is the INVITE's final status (0: none, or none yet).
	SIPStatus int
	// Reason says more: the SIP reason phrase, or why the dial ended.
	Reason string
	// AnsweredBy, DetectReason and Greeting are the verdict's: who
	// answered, why the detector thinks so (amd.Reason*), and how long
	// the greeting it heard was.
	AnsweredBy   string
	DetectReason string
	Greeting     time.Duration
}

// Opening is when and how a placed call's conversation may speak first.
type Opening struct {
	// AnsweredBy is the verdict ("" when detection is off).
	AnsweredBy string
	// Beep says a machine's beep sounded: its recording runs now.
	Beep bool
	// Reason is what opened the call: short_greeting, initial_silence,
	// beep, silence (a machine's greeting ended without a beep), timeout,
	// no_audio.
	Reason string
}

// Outbound reports whether the appliance placed the call.
func (c *Call) Outbound() bool { return c.info.Direction == DirectionOutbound }

// progress records a step of the dial and tells the conversation.
func (c *Call) progress(conv Conversation, p Progress) {
	switch p.Status {
	case ProgressDetected:
		c.m.opts.Metrics.answeredBy.WithLabelValues(p.AnsweredBy).Inc()
	case ProgressAnswered, ProgressBusy, ProgressNoAnswer, ProgressFailed, ProgressCanceled:
		c.m.opts.Metrics.outbound.WithLabelValues(p.Status).Inc()
	}
	c.mu.Lock()
	if p.Status == ProgressDetected {
		c.answeredBy = p.AnsweredBy
	} else {
		c.dialProgress = p.Status
		if p.SIPStatus != 0 {
			c.sipStatus = p.SIPStatus
		}
	}
	c.mu.Unlock()
	d := map[string]any{"status": p.Status}
	if p.SIPStatus != 0 {
		d["sip_status"] = p.SIPStatus
	}
	if p.AnsweredBy != "" {
		d["answered_by"], d["reason"], d["greeting_ms"] = p.AnsweredBy, p.DetectReason, p.Greeting.Milliseconds()
	}
	c.Note(Note{Kind: NoteProgress, Text: p.Status, Data: d})
	c.changed()
	if conv != nil {
		conv.Progress(p)
	}
}

// ringing reports the callee's phone ringing, once.
func (c *Call) ringing() {
	c.mu.Lock()
	first := c.dialProgress == ProgressDialing
	c.mu.Unlock()
	if !first {
		return
	}
	var conv Conversation
	if h := c.conv.Load(); h != nil {
		conv = h.c
	}
	c.progress(conv, Progress{Status: ProgressRinging, SIPStatus: 180})
}

// dialFailed ends a placed call whose callee did not answer, with the
// outcome its leg reported (a *DialError), or failed.
func (c *Call) dialFailed(conv Conversation, err error) {
	p := Progress{Status: ProgressFailed, Reason: err.Error()}
	by := EndedByAppliance
	var de *DialError
	if errors.As(err, &de) {
		p.Status, p.SIPStatus, p.Reason = de.Progress, de.SIPStatus, de.Reason
		if de.ByCallee {
			by = EndedByCallee
		}
	}
	text := p.Status
	if p.SIPStatus != 0 {
		text = fmt.Sprintf("%s: %d %s", p.Status, p.SIPStatus, p.Reason)
	} else if p.Reason != "" {
		text += ": " + p.Reason
	}
	c.setEnd(by, text)
	c.progress(conv, p)
}

// opening is the start of a placed call: the callee's audio goes to the
// machine detector, not to the model, until the callee is ready to hear
// the conversation (open).
type opening struct {
	det    *amd.Detector
	listen *media.Listener
	frames atomic.Int64
	events chan detected
}

// detected is a detector's event with what it knew then.
type detected struct {
	ev       amd.Event
	reason   string
	greeting time.Duration
}

// Limits of the opening.
const (
	// noAudioOpen opens a call whose callee sent no audio at all by then:
	// the detector only runs on frames, and none may ever come.
	noAudioOpen = 4 * time.Second
	// openingLimit opens the call whatever was heard: past the
	// detector's own longest wait (amd.Options.MaxWait, 30 s).
	openingLimit = 35 * time.Second
)

// openingRate is the rate the detector hears the callee at.
const openingRate = media.ClockRate

// frame runs on the media goroutine with each frame of the callee's audio
// while the call is not open.
func (o *opening) frame(pcm []int16) {
	o.frames.Add(1)
	if ev := o.det.Frame(pcm); ev != amd.None {
		select {
		case o.events <- detected{ev: ev, reason: o.det.Reason(), greeting: o.det.Greeting()}:
		default:
		}
	}
}

// startOpening listens to the callee of a placed call that was just
// answered, in a goroutine of the call, until the conversation may speak.
func (c *Call) startOpening(ctx context.Context, conv Conversation) {
	o := &opening{det: amd.New(amd.Options{Rate: openingRate}), events: make(chan detected, 8)}
	l, err := c.caller.audio.ListenPCM(openingRate, func(pcm []int16) {
		defer c.contain("audio in", true)
		o.frame(pcm)
	})
	if err != nil {
		// Without the detector the call opens at once, as for a callee
		// who spoke first.
		c.log.Error().Err(err).Msg("machine detection not started")
		c.open(conv, o, Opening{Reason: "no_audio"})
		return
	}
	o.listen = l
	c.opening.Store(o)
	c.helpers.Add(1)
	go func() {
		defer c.helpers.Done()
		defer c.contain("opening", false)
		c.runOpening(ctx, conv, o)
	}()
}

func (c *Call) runOpening(ctx context.Context, conv Conversation, o *opening) {
	md := c.info.MachineDetection
	detect := md == MachineDetectionDetect || md == MachineDetectionHangup
	verdict := func(by string) string {
		if detect {
			return by
		}
		return ""
	}
	safety := time.NewTimer(noAudioOpen)
	defer safety.Stop()
	limit := time.NewTimer(openingLimit)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-safety.C:
			if o.frames.Load() == 0 {
				if detect {
					c.progress(conv, Progress{Status: ProgressDetected, AnsweredBy: AnsweredByUnknown, DetectReason: "no_audio"})
				}
				c.open(conv, o, Opening{AnsweredBy: verdict(AnsweredByUnknown), Reason: "no_audio"})
				return
			}
		case <-limit.C:
			c.open(conv, o, Opening{AnsweredBy: verdict(c.verdictSoFar()), Reason: "timeout"})
			return
		case d := <-o.events:
			switch d.ev {
			case amd.Human, amd.Unknown:
				by := AnsweredByHuman
				if d.ev == amd.Unknown {
					by = AnsweredByUnknown
				}
				if detect {
					c.progress(conv, Progress{Status: ProgressDetected, AnsweredBy: by, DetectReason: d.reason, Greeting: d.greeting})
				}
				c.open(conv, o, Opening{AnsweredBy: verdict(by), Reason: d.reason})
				return
			case amd.Machine:
				if !detect {
					continue
				}
				c.progress(conv, Progress{Status: ProgressDetected, AnsweredBy: AnsweredByMachine, DetectReason: d.reason, Greeting: d.greeting})
				if md == MachineDetectionHangup {
					c.log.Info().Str("reason", d.reason).Msg("answering machine: hanging up")
					c.hangup("answering machine")
					return
				}
			case amd.Beep, amd.Silence, amd.Timeout:
				c.open(conv, o, Opening{AnsweredBy: verdict(AnsweredByMachine), Beep: d.ev == amd.Beep, Reason: d.ev.String()})
				return
			}
		}
	}
}

// verdictSoFar is the verdict so far (unknown before one).
func (c *Call) verdictSoFar() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answeredBy == "" {
		return AnsweredByUnknown
	}
	return c.answeredBy
}

// open lets the callee's audio through to the conversation and tells it
// to speak.
func (c *Call) open(conv Conversation, o *opening, op Opening) {
	if o.listen != nil {
		o.listen.Stop()
	}
	if err := c.conversationHears(c.caller); err != nil {
		c.log.Debug().Err(err).Msg("the conversation does not hear the callee")
	}
	c.log.Info().Str("answered_by", op.AnsweredBy).Bool("beep", op.Beep).Str("reason", op.Reason).Msg("callee ready: the conversation speaks")
	c.Note(Note{Kind: NoteEvent, Text: "opened", Data: map[string]any{"answered_by": op.AnsweredBy, "beep": op.Beep, "reason": op.Reason}})
	conv.Opened(op)
}
