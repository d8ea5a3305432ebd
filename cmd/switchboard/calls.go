package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func init() {
	register("calls", "calls: list|show, dial (place a call), and live call control: refer|hangup|dtmf, transfer|hold|resume", func(env *cliEnv, args []string) error {
		return subcommand(env, "calls", args, map[string]func(*cliEnv, []string) error{
			"list": callsList, "show": callsShow, "dial": callsDial, "refer": callsRefer, "hangup": callsHangup, "dtmf": callsDTMF,
			"transfer": callsTransfer, "hold": callsHold, "resume": callsResume,
		})
	})
}

// callEntry is one entry of a call record (transcript, tool call, event).
type callEntry struct {
	At   string          `json:"at"`
	Kind string          `json:"kind"`
	Role string          `json:"role"`
	Text string          `json:"text"`
	Data json.RawMessage `json:"data"`
}

// callRecord is a call record as GET /v1/calls returns it.
type callRecord struct {
	CallID        string `json:"call_id"`
	PhoneNumberID string `json:"phone_number_id"`
	PhoneNumber   string `json:"phone_number"`
	From          string `json:"from"`
	To            string `json:"to"`
	SIPCallID     string `json:"sip_call_id"`
	Route         string `json:"route"`
	State         string `json:"state"`
	InvitedAt     string `json:"invited_at"`
	AnsweredAt    string `json:"answered_at"`
	EndedAt       string `json:"ended_at"`
	DurationMS    int64  `json:"duration_ms"`
	EndedBy       string `json:"ended_by"`
	EndReason     string `json:"end_reason"`
	Media         struct {
		PacketsIn  uint64  `json:"packets_in"`
		PacketsOut uint64  `json:"packets_out"`
		Lost       int64   `json:"lost"`
		JitterMS   float64 `json:"jitter_ms"`
		Late       uint64  `json:"late"`
		Concealed  uint64  `json:"concealed"`
		RTTMS      float64 `json:"rtt_ms"`
		// The call's health.
		LossRatio    float64 `json:"loss_ratio"`
		FirstAudioMS int64   `json:"first_audio_ms"`
		TurnLatency  struct {
			Count int   `json:"count"`
			P50MS int64 `json:"p50_ms"`
			P95MS int64 `json:"p95_ms"`
			MaxMS int64 `json:"max_ms"`
		} `json:"turn_latency"`
		BargeIns     uint64   `json:"barge_ins"`
		OneWaySeen   bool     `json:"one_way_seen"`
		DegradedSeen []string `json:"degraded_seen"`
	} `json:"media"`
	Recording *struct {
		URL string `json:"url"`
	} `json:"recording"`
	Transcript []callEntry `json:"transcript"`
	ToolCalls  []callEntry `json:"tool_calls"`
	Events     []callEntry `json:"events"`
	// A placed call's direction, dial and machine detection.
	Direction        string `json:"direction"`
	Progress         string `json:"progress"`
	SIPStatus        int    `json:"sip_status"`
	MachineDetection string `json:"machine_detection"`
	AnsweredBy       string `json:"answered_by"`
}

// localTime shows an RFC 3339 time of the API in the local zone.
func localTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return orDash(s)
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// humanDuration shows milliseconds as 1h02m03s, 4m05s or 6.7s.
func humanDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm%02ds", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

func (c *callRecord) duration() string {
	if c.AnsweredAt == "" {
		return "-"
	}
	return humanDuration(c.DurationMS)
}

func (e *cliEnv) callTable(cs []callRecord) error {
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		rows = append(rows, []string{c.CallID, c.State, orDash(c.From), orDash(c.To), orDash(c.Route),
			localTime(c.InvitedAt), c.duration(), orDash(c.EndedBy)})
	}
	return e.table([]string{"CALL ID", "STATE", "FROM", "TO", "ROUTE", "STARTED", "DURATION", "ENDED BY"}, rows)
}

// sinceWhen accepts an RFC 3339 time or a duration before now ("24h").
func sinceWhen(s string) (string, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return "", fmt.Errorf("%q is neither a duration (24h: that long ago) nor an RFC 3339 time", s)
	}
	return s, nil
}

func callsList(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls list")
	state := fs.String("state", "", "ringing, active or ended")
	number := fs.String("number", "", "phone number (E.164) or phone number id")
	from := fs.String("from", "", "calling user, e.g. +14155550123")
	to := fs.String("to", "", "called user")
	since := fs.String("since", "", "calls invited at or after: RFC 3339 time or duration ago (24h)")
	until := fs.String("until", "", "calls invited before: RFC 3339 time or duration ago")
	limit := fs.Int("limit", 50, "at most this many calls, newest first (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *limit < 0 {
		return fmt.Errorf("--limit must be 0 or more")
	}
	q := url.Values{}
	for k, v := range map[string]string{"state": *state, "from": *from, "to": *to} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *number != "" {
		if strings.HasPrefix(*number, "+") {
			q.Set("phone_number", *number)
		} else {
			q.Set("phone_number_id", *number)
		}
	}
	for k, v := range map[string]string{"since": *since, "until": *until} {
		if v == "" {
			continue
		}
		t, err := sinceWhen(v)
		if err != nil {
			return fmt.Errorf("--%s: %w", k, err)
		}
		q.Set(k, t)
	}
	size := 100 // the server's largest page
	if *limit > 0 && *limit < size {
		size = *limit
	}
	q.Set("page_size", strconv.Itoa(size))
	c, err := env.client()
	if err != nil {
		return err
	}
	var raws []json.RawMessage
	for *limit == 0 || len(raws) < *limit {
		var page struct {
			Calls         []json.RawMessage `json:"calls"`
			NextPageToken string            `json:"next_page_token"`
		}
		if err := c.do("GET", "/v1/calls", q, nil, &page); err != nil {
			return err
		}
		raws = append(raws, page.Calls...)
		if page.NextPageToken == "" {
			break
		}
		q.Set("page_token", page.NextPageToken)
	}
	if *limit > 0 && len(raws) > *limit {
		raws = raws[:*limit]
	}
	if *asJSON {
		return env.printJSON(map[string]any{"calls": nonNil(raws)})
	}
	all := make([]callRecord, 0, len(raws))
	for _, r := range raws {
		var cr callRecord
		if err := json.Unmarshal(r, &cr); err != nil {
			return err
		}
		all = append(all, cr)
	}
	return env.callTable(all)
}

func callsShow(env *cliEnv, args []string) error {
	fs, asJSON := newFlags(env, "calls show")
	id, err := idAndFlags(fs, args, "call id")
	if err != nil {
		return err
	}
	c, err := env.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do("GET", "/v1/calls/"+url.PathEscape(id), nil, nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		return env.printJSON(raw)
	}
	var cr callRecord
	if err := json.Unmarshal(raw, &cr); err != nil {
		return err
	}
	env.showCall(&cr)
	return nil
}

// showCall prints a call record for a person: the facts, the media
// figures, then the transcript, tool calls and events with their offset
// from the invite.
func (e *cliEnv) showCall(c *callRecord) {
	w := e.stdout
	number := orDash(c.PhoneNumber)
	if c.PhoneNumberID != "" {
		number += " (" + c.PhoneNumberID + ")"
	}
	ended := localTime(c.EndedAt)
	if c.EndedBy != "" {
		ended += " by " + c.EndedBy
		if c.EndReason != "" {
			ended += ": " + c.EndReason
		}
	}
	for _, l := range [][2]string{
		{"Call", c.CallID}, {"State", c.State}, {"Number", number}, {"From", orDash(c.From)}, {"To", orDash(c.To)},
		{"Route", orDash(c.Route)}, {"SIP Call-ID", orDash(c.SIPCallID)}, {"Invited", localTime(c.InvitedAt)},
		{"Answered", localTime(c.AnsweredAt)}, {"Ended", ended}, {"Duration", c.duration()},
		{"Media", fmt.Sprintf("%d packets in, %d out, %d lost, jitter %.1f ms, %d late, %d concealed",
			c.Media.PacketsIn, c.Media.PacketsOut, c.Media.Lost, c.Media.JitterMS, c.Media.Late, c.Media.Concealed)},
		{"Health", c.health()}, {"Recording", c.recording()}, {"Direction", orDash(c.Direction)},
	} {
		fmt.Fprintf(w, "%-12s %s\n", l[0], l[1])
	}
	if c.Direction == "outbound" {
		dial := orDash(c.Progress)
		if c.SIPStatus != 0 {
			dial += fmt.Sprintf(" (SIP %d)", c.SIPStatus)
		}
		fmt.Fprintf(w, "%-12s %s\n%-12s %s, answered by %s\n", "Dial", dial, "Detection", orDash(c.MachineDetection), orDash(c.AnsweredBy))
	}
	start, _ := time.Parse(time.RFC3339Nano, c.InvitedAt)
	offset := func(at string) string {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || start.IsZero() {
			return "[   ?   ]"
		}
		d := t.Sub(start)
		return fmt.Sprintf("[%02d:%04.1f]", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
	}
	fmt.Fprintln(w, "\nTranscript")
	if len(c.Transcript) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, l := range c.Transcript {
		fmt.Fprintf(w, "  %s %s: %s\n", offset(l.At), orDash(l.Role), l.Text)
	}
	for _, sec := range []struct {
		title   string
		entries []callEntry
	}{{"Tool calls", c.ToolCalls}, {"Events", c.Events}} {
		if len(sec.entries) == 0 {
			continue
		}
		fmt.Fprintln(w, "\n"+sec.title)
		for _, en := range sec.entries {
			line := fmt.Sprintf("  %s %s", offset(en.At), en.Kind)
			if en.Text != "" {
				line += " " + en.Text
			}
			if len(en.Data) > 0 && string(en.Data) != "null" {
				line += " " + string(en.Data)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// health summarises the record's media health for a person.
func (c *callRecord) health() string {
	m := c.Media
	s := fmt.Sprintf("loss %.1f%%", 100*m.LossRatio)
	if m.FirstAudioMS >= 0 {
		s += fmt.Sprintf(", first audio %d ms after answer", m.FirstAudioMS)
	}
	if tl := m.TurnLatency; tl.Count > 0 {
		s += fmt.Sprintf(", turn latency p50 %d ms p95 %d ms max %d ms (%d turns)", tl.P50MS, tl.P95MS, tl.MaxMS, tl.Count)
	}
	s += fmt.Sprintf(", %d barge-ins", m.BargeIns)
	if m.OneWaySeen {
		s += ", one-way audio"
	}
	if len(m.DegradedSeen) > 0 {
		s += ", degraded: " + strings.Join(m.DegradedSeen, " ")
	}
	return s
}

// recording is where the call's recording is, or "-".
func (c *callRecord) recording() string {
	if c.Recording == nil {
		return "-"
	}
	return c.Recording.URL
}
