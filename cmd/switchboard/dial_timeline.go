package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"switchboard/sip"
)

// dialEvent is one line of the `switchboard dial` timeline.
type dialEvent struct {
	// Offset is the time since the first INVITE was sent, in seconds.
	Offset float64 `json:"offset_s"`
	// Kind is a dialer event kind (invite_sent, provisional, challenge,
	// answered, ack_sent, cancel_sent, bye_sent, bye_received, info_sent,
	// refer_received) or one of the command's own: failed, first_rtp_in,
	// dtmf_sent, bye_answered, warning.
	Kind   string `json:"kind"`
	Status int    `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Text is the line as printed.
	Text string `json:"text"`

	at time.Time
}

// timeline collects the events of one call and, in text mode, prints each
// as it happens: "+0.012s 180 Ringing". The answered and ack_sent events
// of the softphone are held until the answer's media is known, so the 200 OK
// line can show the negotiated codec. Safe for concurrent use: the softphone,
// the media goroutine and the command add events.
type timeline struct {
	mu       sync.Mutex
	out      io.Writer // nil: collect only (JSON mode)
	t0       time.Time
	events   []dialEvent
	held     []dialEvent
	holding  bool
	inviteN  int
	answered bool
}

func newTimeline(out io.Writer) *timeline { return &timeline{out: out} }

// add records an event at time at.
func (tl *timeline) add(at time.Time, kind string, status int, reason, text string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.addLocked(dialEvent{at: at, Kind: kind, Status: status, Reason: reason, Text: text})
}

func (tl *timeline) addLocked(e dialEvent) {
	if tl.t0.IsZero() {
		tl.t0 = e.at
	}
	e.Offset = e.at.Sub(tl.t0).Seconds()
	if tl.holding {
		tl.held = append(tl.held, e)
		return
	}
	tl.events = append(tl.events, e)
	if tl.out != nil {
		fmt.Fprintf(tl.out, "%+.3fs %s\n", e.Offset, e.Text)
	}
}

// onSIP is the softphone's OnEvent hook.
func (tl *timeline) onSIP(e sip.SoftphoneEvent) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	ev := dialEvent{at: e.Time, Kind: e.Kind, Status: e.Status, Reason: e.Reason}
	switch e.Kind {
	case "invite_sent":
		tl.inviteN++
		ev.Text = "INVITE sent to " + e.Detail
		if tl.inviteN > 1 {
			ev.Text += " (with credentials)"
		}
	case "provisional":
		ev.Text = fmt.Sprintf("%d %s", e.Status, e.Reason)
	case "challenge":
		ev.Text = fmt.Sprintf("%d %s (digest challenge, answering)", e.Status, e.Reason)
	case "answered":
		tl.answered = true
		tl.holding = true
		ev.Text = fmt.Sprintf("%d %s (answered)", e.Status, e.Reason)
	case "ack_sent":
		ev.Text = "ACK sent"
	case "failed":
		return // the command prints the failure with its own words
	case "cancel_sent":
		ev.Text = "CANCEL sent"
	case "bye_sent":
		ev.Text = "BYE sent"
		if e.Detail != "" {
			ev.Text += " (" + e.Detail + ")"
		}
	case "bye_received":
		ev.Text = "BYE received"
		if e.Detail != "" {
			ev.Text += " (Reason: " + e.Detail + ")"
		}
	case "info_sent":
		ev.Text = "INFO sent (" + e.Detail + ")"
	case "refer_received":
		ev.Text = "REFER received (Refer-To: " + e.Detail + "), declined"
	default:
		ev.Text = strings.ReplaceAll(e.Kind, "_", " ")
		if e.Detail != "" {
			ev.Text += " (" + e.Detail + ")"
		}
	}
	tl.addLocked(ev)
}

// release prints the held answer events; media, when not empty, is put in
// the 200 OK line: "200 OK (answered: PCMU/8000 ptime 20ms, …)".
func (tl *timeline) release(media string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	held := tl.held
	tl.held, tl.holding = nil, false
	for _, e := range held {
		if e.Kind == "answered" && media != "" {
			e.Text = fmt.Sprintf("%d %s (answered: %s)", e.Status, e.Reason, media)
		}
		tl.addLocked(e)
	}
}

// snapshot returns the events so far.
func (tl *timeline) snapshot() []dialEvent {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]dialEvent(nil), tl.events...)
}

// printf writes a line outside the timeline (summary), in text mode only.
func (tl *timeline) printf(format string, args ...any) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.out != nil {
		fmt.Fprintf(tl.out, format+"\n", args...)
	}
}

// describeMedia is the answered media in a timeline line.
func describeMedia(m sip.MediaParams) string {
	s := fmt.Sprintf("%s/%d ptime %v", m.Codec.Name, m.Codec.ClockRate, m.Ptime)
	if m.DTMFPayloadType != 0 {
		s += fmt.Sprintf(", telephone-event %d", m.DTMFPayloadType)
	} else {
		s += ", no telephone-event"
	}
	s += ", remote " + m.RemoteAddr.String()
	if m.Direction != sip.SendRecv && m.Direction != "" {
		s += ", " + string(m.Direction)
	}
	return s
}
