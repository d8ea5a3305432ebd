package records

import (
	"encoding/json"
	"time"

	"switchboard/call"
)

// Transfer is one transfer of a call as its record lists it (POST
// /v1/calls/{id}/transfer, or an agent's transfer target with a mode):
// where it went, how it ended and when each step came. The steps are
// also among the record's events (kind transfer).
type Transfer struct {
	TransferID string `json:"transfer_id"`
	Mode       string `json:"mode"`
	TargetURI  string `json:"target_uri"`
	// By is who asked: api or agent.
	By string `json:"by,omitempty"`
	// Status is the last step; Outcome the final one (bridged, referred,
	// declined, no_answer, busy, voicemail, failed, caller_left), absent
	// while the transfer runs.
	Status    string    `json:"status"`
	Outcome   string    `json:"outcome,omitempty"`
	SIPStatus int       `json:"sip_status,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	StartedAt Timestamp `json:"started_at"`
	EndedAt   Timestamp `json:"ended_at"`
	// DurationMS is the time from the start to the outcome (0 while it
	// runs).
	DurationMS int64          `json:"duration_ms"`
	Steps      []TransferStep `json:"steps"`
	// Leg is the human's SIP leg once they answered (absent before, and
	// for a REFER); its media figures are in the record's events (kind
	// party, text left) under its party_id.
	Leg *TransferLeg `json:"leg,omitempty"`
}

// TransferLeg is the human's leg of a transfer as it answered.
type TransferLeg struct {
	PartyID   string `json:"party_id"`
	SIPCallID string `json:"sip_call_id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Codec     string `json:"codec"`
}

// TransferStep is one step of a transfer: its status, when, and the time
// since the transfer started.
type TransferStep struct {
	Status    string    `json:"status"`
	At        Timestamp `json:"at"`
	ElapsedMS int64     `json:"elapsed_ms"`
	SIPStatus int       `json:"sip_status,omitempty"`
}

// transferData is the data of a transfer step's entry (package transfer
// writes it).
type transferData struct {
	TransferID string `json:"transfer_id"`
	Mode       string `json:"mode"`
	TargetURI  string `json:"target_uri"`
	Status     string `json:"status"`
	SIPStatus  int    `json:"sip_status"`
	Reason     string `json:"reason"`
	ElapsedMS  int64  `json:"elapsed_ms"`
	By         string `json:"by"`
	Final      bool   `json:"final"`
	// Leg comes with the answered step.
	Leg *TransferLeg `json:"leg"`
}

// transfersOf gathers the transfers of a record's entries, in the order
// they started.
func transfersOf(entries []Entry) []Transfer {
	out := []Transfer{}
	at := map[string]int{}
	for _, e := range entries {
		if e.Kind != call.NoteTransfer || len(e.Data) == 0 {
			continue
		}
		var d transferData
		if json.Unmarshal(e.Data, &d) != nil || d.TransferID == "" {
			continue // a bare REFER's entry
		}
		i, ok := at[d.TransferID]
		if !ok {
			i = len(out)
			at[d.TransferID] = i
			out = append(out, Transfer{TransferID: d.TransferID, Mode: d.Mode, TargetURI: d.TargetURI, By: d.By,
				StartedAt: Timestamp(e.At.Time().Add(-time.Duration(d.ElapsedMS) * time.Millisecond)), Steps: []TransferStep{}})
		}
		t := &out[i]
		t.Status = d.Status
		if d.SIPStatus != 0 {
			t.SIPStatus = d.SIPStatus
		}
		if d.Leg != nil {
			t.Leg = d.Leg
		}
		t.Steps = append(t.Steps, TransferStep{Status: d.Status, At: e.At, ElapsedMS: d.ElapsedMS, SIPStatus: d.SIPStatus})
		if d.Final {
			t.Outcome, t.Reason, t.EndedAt, t.DurationMS = d.Status, d.Reason, e.At, d.ElapsedMS
		}
	}
	return out
}
