package transfer

import (
	"time"

	"switchboard/call"
)

// Status is a step of a transfer (the switchboard.call.transfer event's
// and the realtime.call.transfer webhook's status).
type Status string

// Steps on the way.
const (
	// StatusDialing: the human's leg is being called (for a REFER: the
	// caller's side accepted it and is calling the target).
	StatusDialing Status = "dialing"
	// StatusRinging: the human's phone rings.
	StatusRinging Status = "ringing"
	// StatusAnswered: the human answered.
	StatusAnswered Status = "answered"
	// StatusBriefing: the human hears the briefing.
	StatusBriefing Status = "briefing"
)

// Outcomes: the last status of a transfer.
const (
	// StatusBridged: the caller and the human hear each other through
	// the appliance.
	StatusBridged Status = "bridged"
	// StatusReferred: the caller's side took the call to the target
	// itself (REFER; NOTIFY 2xx); the appliance's legs end.
	StatusReferred Status = "referred"
	// StatusDeclined: the human declined (key 2, 603, or hung up before
	// accepting).
	StatusDeclined Status = "declined"
	// StatusNoAnswer: nobody answered within the timeout, or the human
	// did not accept in time.
	StatusNoAnswer Status = "no_answer"
	// StatusBusy: the target was busy (486, 600).
	StatusBusy Status = "busy"
	// StatusVoicemail: a machine answered (answering-machine detection).
	StatusVoicemail Status = "voicemail"
	// StatusFailed: the call to the target or the REFER failed.
	StatusFailed Status = "failed"
	// StatusCallerLeft: the caller hung up during the transfer.
	StatusCallerLeft Status = "caller_left"
)

// Final reports whether s ends a transfer.
func (s Status) Final() bool {
	switch s {
	case StatusBridged, StatusReferred, StatusDeclined, StatusNoAnswer, StatusBusy, StatusVoicemail, StatusFailed, StatusCallerLeft:
		return true
	}
	return false
}

// Succeeded reports whether s hands the caller on (bridged or referred).
func (s Status) Succeeded() bool { return s == StatusBridged || s == StatusReferred }

// Update is one step of a transfer, as the Reporter and the call record
// get it.
type Update struct {
	TransferID string
	Mode       Mode
	TargetURI  string
	Status     Status
	// SIPStatus is the SIP status behind the step (0: none).
	SIPStatus int
	// Reason says more (the SIP reason phrase, why a transfer ended).
	Reason string
	At     time.Time
	// Elapsed is the time since the transfer started.
	Elapsed time.Duration
}

// Reporter is told of each step of a transfer (the conversation: its
// controller's socket and the number's webhook); it must not block.
type Reporter interface {
	Update(u Update)
}

// Result is how a transfer ended.
type Result struct {
	Status    Status
	SIPStatus int
	Reason    string
	// Human is the human's party once the caller is bridged to it: its
	// leg ending ends the call.
	Human *call.Party
	// FellBack says a REFER was refused and the caller was bridged
	// instead (mode auto, or refer with Replaces).
	FellBack bool
}

// note is the call record's entry of an update: every step of one
// transfer carries its transfer_id, so the record can list each transfer
// with its outcome and timings.
func note(u Update, by string) call.Note {
	d := map[string]any{"transfer_id": u.TransferID, "mode": string(u.Mode), "target_uri": u.TargetURI,
		"status": string(u.Status), "elapsed_ms": u.Elapsed.Milliseconds()}
	if u.SIPStatus != 0 {
		d["sip_status"] = u.SIPStatus
	}
	if u.Reason != "" {
		d["reason"] = u.Reason
	}
	if by != "" {
		d["by"] = by
	}
	if u.Status.Final() {
		d["final"] = true
	}
	return call.Note{At: u.At, Kind: call.NoteTransfer, Text: string(u.Status), Data: d}
}
