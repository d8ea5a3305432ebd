package records

import (
	"encoding/json"
	"fmt"
	"time"

	"switchboard/call"
	"switchboard/media"
	"switchboard/store"
)

// TimeLayout is the layout of every timestamp of a call record: RFC 3339
// in UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Timestamp is a time that is written as TimeLayout, or null when zero.
type Timestamp time.Time

// Time returns t as a time.Time.
func (t Timestamp) Time() time.Time { return time.Time(t) }

// MarshalJSON writes the time in TimeLayout, or null for the zero time.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + time.Time(t).UTC().Format(TimeLayout) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time or null.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Timestamp{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	*t = Timestamp(v)
	return nil
}

// Record is a call as the API shows it.
type Record struct {
	CallID        string `json:"call_id"`
	PhoneNumberID string `json:"phone_number_id"`
	PhoneNumber   string `json:"phone_number"`
	From          string `json:"from"`
	To            string `json:"to"`
	SIPCallID     string `json:"sip_call_id"`
	Route         string `json:"route"`
	// Channel is "sip" (a phone call) or "webrtc" (a browser call).
	Channel    string    `json:"channel"`
	State      string    `json:"state"`
	InvitedAt  Timestamp `json:"invited_at"`
	AnsweredAt Timestamp `json:"answered_at"`
	EndedAt    Timestamp `json:"ended_at"`
	// DurationMS is the talk time, answer to end (to now for a live
	// call); 0 when the call was never answered.
	DurationMS int64  `json:"duration_ms"`
	EndedBy    string `json:"ended_by"`
	EndReason  string `json:"end_reason"`
	Media      Media  `json:"media"`
	// Recording is where the call's recording is served; null when the
	// call has none (not recorded, deleted, or past the retention).
	Recording *RecordingRef `json:"recording"`
	// Transcript holds both sides' transcripts, in order.
	Transcript []TranscriptLine `json:"transcript"`
	// ToolCalls holds tool calls and their results, in order.
	ToolCalls []Entry `json:"tool_calls"`
	// Events holds every other entry (DTMF, transfers, webhook attempts).
	Events []Entry `json:"events"`
	// Transfers lists the call's transfers (to a human: bridged, warm,
	// refer, auto) with their outcome and the time of each step.
	Transfers []Transfer `json:"transfers"`
	// Holds lists the holds of the call from a phone, the caller's or a
	// transfer's human's, with who held and when.
	Holds []Hold `json:"holds"`
	// NodeID is the node of the fleet that holds (or held) the call.
	NodeID string `json:"node_id"`
	// Direction is "inbound" (answered) or "outbound" (placed with
	// POST /v1/calls).
	Direction string `json:"direction"`
	// Progress is how far a placed call's dial got: dialing, ringing,
	// answered, busy, no-answer, failed or canceled; SIPStatus the final
	// status of its INVITE.
	Progress  string `json:"progress,omitempty"`
	SIPStatus int    `json:"sip_status,omitempty"`
	// MachineDetection is a placed call's answering-machine detection
	// (off, detect, hangup_on_machine) and AnsweredBy its verdict (human,
	// machine, unknown; absent before it decided).
	MachineDetection string `json:"machine_detection,omitempty"`
	AnsweredBy       string `json:"answered_by,omitempty"`
	// Context is what an agent-routed call ran with: its variables, the
	// ones its instructions or greeting named that it did not define, its
	// agent and its number's context_url's answer; absent for other calls.
	Context *call.Context `json:"context,omitempty"`
}

// TranscriptLine is one transcript entry: role is "user" (the caller) or
// "assistant".
type TranscriptLine struct {
	At   Timestamp `json:"at"`
	Role string    `json:"role"`
	Text string    `json:"text"`
}

// Entry is one entry of a call record (a call.Note as JSON).
type Entry struct {
	At   Timestamp       `json:"at"`
	Kind string          `json:"kind"`
	Role string          `json:"role,omitempty"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Media is a call's RTP statistics, durations in milliseconds.
type Media struct {
	PacketsIn          uint64  `json:"packets_in"`
	BytesIn            uint64  `json:"bytes_in"`
	PacketsOut         uint64  `json:"packets_out"`
	BytesOut           uint64  `json:"bytes_out"`
	Lost               int64   `json:"lost"`
	Expected           uint64  `json:"expected"`
	Duplicates         uint64  `json:"duplicates"`
	Late               uint64  `json:"late"`
	Played             uint64  `json:"played"`
	Concealed          uint64  `json:"concealed"`
	Silenced           uint64  `json:"silenced"`
	SSRCChanges        uint64  `json:"ssrc_changes"`
	Resyncs            uint64  `json:"resyncs"`
	Ignored            uint64  `json:"ignored"`
	JitterMS           float64 `json:"jitter_ms"`
	Latches            uint64  `json:"latches"`
	Strangers          uint64  `json:"strangers"`
	RTCPIn             uint64  `json:"rtcp_in"`
	RTCPOut            uint64  `json:"rtcp_out"`
	RemoteFractionLost float64 `json:"remote_fraction_lost"`
	RemoteLost         int64   `json:"remote_lost"`
	RemoteJitterMS     float64 `json:"remote_jitter_ms"`
	RTTMS              float64 `json:"rtt_ms"`
	// MediaHealth adds how the call sounded: loss over the window, silence
	// each way, one-way audio, the time to the first audio heard, turn
	// latency (p50/p95/max) and barge-ins.
	call.MediaHealth
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mediaOf(s media.StatsSnapshot, h call.MediaHealth) Media {
	return Media{MediaHealth: h,
		PacketsIn: s.PacketsIn, BytesIn: s.BytesIn, PacketsOut: s.PacketsOut, BytesOut: s.BytesOut,
		Lost: s.Lost, Expected: s.Expected, Duplicates: s.Duplicates, Late: s.Late,
		Played: s.Played, Concealed: s.Concealed, Silenced: s.Silenced, SSRCChanges: s.SSRCChanges,
		Resyncs: s.Resyncs, Ignored: s.Ignored, JitterMS: ms(s.Jitter), Latches: s.Latches, Strangers: s.Strangers,
		RTCPIn: s.RTCPIn, RTCPOut: s.RTCPOut, RemoteFractionLost: s.RemoteFractionLost,
		RemoteLost: s.RemoteLost, RemoteJitterMS: ms(s.RemoteJitter), RTTMS: ms(s.RTT),
	}
}

// entryOf turns a note into an entry. Data that cannot be written as JSON
// is kept as its printed form rather than losing the whole record.
func entryOf(n call.Note) Entry {
	e := Entry{At: Timestamp(n.At), Kind: n.Kind, Role: n.Role, Text: n.Text}
	if n.Data != nil {
		b, err := json.Marshal(n.Data)
		if err != nil {
			b, _ = json.Marshal(fmt.Sprint(n.Data))
		}
		e.Data = b
	}
	return e
}

// split sorts entries into the record's transcript, tool calls and
// events, keeping their order; the call's context becomes its own field.
func (r *Record) split(entries []Entry) {
	r.Transcript, r.ToolCalls, r.Events = []TranscriptLine{}, []Entry{}, []Entry{}
	for _, e := range entries {
		switch e.Kind {
		case call.NoteContext:
			var c call.Context
			if err := json.Unmarshal(e.Data, &c); err == nil {
				r.Context = &c
				continue
			}
			r.Events = append(r.Events, e)
		case call.NoteTranscript:
			r.Transcript = append(r.Transcript, TranscriptLine{At: e.At, Role: e.Role, Text: e.Text})
		case call.NoteToolCall, call.NoteToolResult:
			r.ToolCalls = append(r.ToolCalls, e)
		default:
			r.Events = append(r.Events, e)
		}
	}
	r.Transfers = transfersOf(entries)
	r.Holds = holdsOf(entries)
}

func durationMS(answered, ended, now time.Time) int64 {
	if answered.IsZero() {
		return 0
	}
	if ended.IsZero() {
		ended = now
	}
	if d := ended.Sub(answered); d > 0 {
		return d.Milliseconds()
	}
	return 0
}

// fromSnapshot is the record of a call's current view; now measures the
// duration of a call still in progress.
func fromSnapshot(s call.Snapshot, now time.Time) *Record {
	r := &Record{
		CallID: s.ID, PhoneNumberID: s.NumberID, PhoneNumber: s.PhoneNumber, From: s.From, To: s.To,
		SIPCallID: s.SIPCallID, Route: s.Route, Channel: s.Channel, State: string(s.State),
		InvitedAt: Timestamp(s.Started), AnsweredAt: Timestamp(s.Answered), EndedAt: Timestamp(s.Ended),
		DurationMS: durationMS(s.Answered, s.Ended, now), EndedBy: s.EndedBy, EndReason: s.EndReason,
		Media: mediaOf(s.Media, s.Health), Direction: s.Direction, Progress: s.Progress, SIPStatus: s.SIPStatus,
		MachineDetection: string(s.MachineDetection), AnsweredBy: s.AnsweredBy,
	}
	if r.Direction == "" {
		r.Direction = call.DirectionInbound
	}
	entries := make([]Entry, 0, len(s.Notes))
	for _, n := range s.Notes {
		entries = append(entries, entryOf(n))
	}
	r.split(entries)
	return r
}

// Of is the record of a call's current view (a live call's, as the API
// shows it).
func Of(s call.Snapshot) *Record { return fromSnapshot(s, time.Now()) }

// toStore is the stored form of a finished call's snapshot.
func toStore(s call.Snapshot, teamID string) (*store.Call, error) {
	entries := make([]Entry, 0, len(s.Notes))
	for _, n := range s.Notes {
		entries = append(entries, entryOf(n))
	}
	notes, err := json.Marshal(entries)
	if err != nil {
		return nil, fmt.Errorf("encode notes: %w", err)
	}
	m, err := json.Marshal(mediaOf(s.Media, s.Health))
	if err != nil {
		return nil, fmt.Errorf("encode media: %w", err)
	}
	return &store.Call{
		ID: s.ID, TeamID: teamID, PhoneNumberID: s.NumberID, PhoneNumber: s.PhoneNumber, From: s.From, To: s.To,
		SIPCallID: s.SIPCallID, Route: s.Route, Channel: s.Channel, State: string(s.State), InviteTime: s.Started, AnswerTime: s.Answered,
		EndTime: s.Ended, EndedBy: s.EndedBy, EndReason: s.EndReason, Media: m, Notes: notes,
		Direction: s.Direction, Progress: s.Progress, SIPStatus: s.SIPStatus, MachineDetection: string(s.MachineDetection),
		AnsweredBy: s.AnsweredBy,
	}, nil
}

// fromStore is the record of a stored call.
func fromStore(c *store.Call) (*Record, error) {
	r := &Record{
		CallID: c.ID, PhoneNumberID: c.PhoneNumberID, PhoneNumber: c.PhoneNumber, From: c.From, To: c.To,
		SIPCallID: c.SIPCallID, Route: c.Route, Channel: c.Channel, State: c.State,
		InvitedAt: Timestamp(c.InviteTime), AnsweredAt: Timestamp(c.AnswerTime), EndedAt: Timestamp(c.EndTime),
		DurationMS: durationMS(c.AnswerTime, c.EndTime, c.EndTime), EndedBy: c.EndedBy, EndReason: c.EndReason,
		NodeID: c.NodeID, Direction: c.Direction, Progress: c.Progress, SIPStatus: c.SIPStatus,
		MachineDetection: c.MachineDetection, AnsweredBy: c.AnsweredBy,
	}
	if r.Direction == "" {
		r.Direction = call.DirectionInbound
	}
	if len(c.Media) > 0 {
		if err := json.Unmarshal(c.Media, &r.Media); err != nil {
			return nil, fmt.Errorf("call %s: decode media: %w", c.ID, err)
		}
	}
	var entries []Entry
	if len(c.Notes) > 0 {
		if err := json.Unmarshal(c.Notes, &entries); err != nil {
			return nil, fmt.Errorf("call %s: decode notes: %w", c.ID, err)
		}
	}
	r.split(entries)
	return r, nil
}
