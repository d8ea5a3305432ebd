package records

import (
	"encoding/json"

	"switchboard/call"
)

// Hold is one hold of the call from a phone (a re-INVITE with a=sendonly,
// a=inactive or c=0.0.0.0, then one with a=sendrecv): who held it, the
// caller or a transfer's human, and when. The entries it is made of are
// among the record's events too (kind hold, text held or resumed).
type Hold struct {
	// By is the role of the party whose phone held the call: caller or
	// human.
	By      string    `json:"by"`
	PartyID string    `json:"party_id"`
	HeldAt  Timestamp `json:"held_at"`
	// ResumedAt is null while the hold lasts (and for a call that ended
	// on hold); DurationMS is 0 then.
	ResumedAt  Timestamp `json:"resumed_at"`
	DurationMS int64     `json:"duration_ms"`
}

// holdData is the data of a hold entry (call.notePeerHold writes it).
type holdData struct {
	PartyID string `json:"party_id"`
	By      string `json:"by"`
}

// holdsOf gathers the holds of a record's entries, in the order they
// started.
func holdsOf(entries []Entry) []Hold {
	out := []Hold{}
	open := map[string]int{} // party → its hold in out
	for _, e := range entries {
		if e.Kind != call.NoteHold {
			continue
		}
		var d holdData
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		i, held := open[d.PartyID]
		switch e.Text {
		case "held":
			if !held {
				open[d.PartyID] = len(out)
				out = append(out, Hold{By: d.By, PartyID: d.PartyID, HeldAt: e.At})
			}
		case "resumed":
			if held {
				h := &out[i]
				h.ResumedAt = e.At
				h.DurationMS = e.At.Time().Sub(h.HeldAt.Time()).Milliseconds()
				delete(open, d.PartyID)
			}
		}
	}
	return out
}
