package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"switchboard/api"
	"switchboard/auth"
	"switchboard/call"
	"switchboard/media"
	"switchboard/records"
	"switchboard/store"
)

// callsDaemon serves the calls module (with the real key service) over a
// store holding stored call records, and returns the CLI's environment.
func callsDaemon(t *testing.T, snaps ...call.Snapshot) func(string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.OpenSQLite(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	keys := auth.NewKeyService(st)
	_, err = keys.Bootstrap(ctx, dir, "default", "")
	require.NoError(t, err)
	rec := records.NewRecorder(st, records.RecorderOptions{})
	for _, s := range snaps {
		require.NoError(t, rec.Save(ctx, s))
	}
	hs := httptest.NewServer(api.New(zerolog.Nop(), keys, []api.Module{keys, records.NewService(st, nil, records.Options{})}).Handler())
	t.Cleanup(hs.Close)
	env := map[string]string{"SWITCHBOARD_URL": hs.URL, "SWITCHBOARD_DATA_DIR": dir}
	return func(k string) string { return env[k] }
}

func runIn(t *testing.T, getenv func(string) string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb, getenv)
	return out.String(), errb.String(), code
}

func TestCLICallsListAndShow(t *testing.T) {
	inv := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ans := inv.Add(2 * time.Second)
	full := call.Snapshot{ID: "c-full", NumberID: "pn_1", PhoneNumber: "+18005550100", From: "+14155550123", To: "+18005550100",
		SIPCallID: "sip-1", State: call.StateEnded, Started: inv, Answered: ans, Ended: ans.Add(65 * time.Second),
		EndedBy: call.EndedByAppliance, EndReason: "conversation ended", Route: "agent:ag_1",
		Media: media.StatsSnapshot{PacketsIn: 3250, PacketsOut: 3240, Lost: 4, Jitter: 2 * time.Millisecond, Late: 1, Concealed: 2},
		Health: call.MediaHealth{LossRatio: 0.0012, FirstAudioMS: 40, TurnLatency: call.Latency{Count: 3, P50MS: 800, P95MS: 950, MaxMS: 950},
			BargeIns: 1, OneWaySeen: true, DegradedSeen: []string{call.DegradedOneWay}},
		Notes: []call.Note{
			{At: ans.Add(time.Second), Kind: call.NoteTranscript, Role: "assistant", Text: "Hello there."},
			{At: ans.Add(3500 * time.Millisecond), Kind: call.NoteTranscript, Role: "user", Text: "Book a table."},
			{At: ans.Add(4 * time.Second), Kind: call.NoteToolCall, Text: "book", Data: map[string]any{"people": 2}},
			{At: ans.Add(5 * time.Second), Kind: call.NoteDTMF, Text: "1"},
		}}
	rejected := call.Snapshot{ID: "c-rej", PhoneNumber: "+18005550100", From: "anonymous", To: "+18005550100", State: call.StateEnded, Started: inv.Add(time.Minute),
		Ended: inv.Add(time.Minute + time.Second), EndedBy: call.EndedByRejected, EndReason: "480 Temporarily Unavailable"}
	getenv := callsDaemon(t, full, rejected)

	out, errs, code := runIn(t, getenv, "calls", "list")
	require.Equal(t, 0, code, errs)
	lines := bytes.Split(bytes.TrimSpace([]byte(out)), []byte("\n"))
	require.Len(t, lines, 3)
	require.Regexp(t, `^CALL ID\s+STATE\s+FROM\s+TO\s+ROUTE\s+STARTED\s+DURATION\s+ENDED BY$`, string(lines[0]))
	require.Regexp(t, `^c-rej\s+ended\s+anonymous\s+\+18005550100\s+-\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+-\s+rejected$`, string(lines[1]))
	require.Regexp(t, `^c-full\s+ended\s+\+14155550123\s+\+18005550100\s+agent:ag_1\s+.+\s+1m05s\s+appliance$`, string(lines[2]))

	out, errs, code = runIn(t, getenv, "calls", "list", "--limit", "1", "--json")
	require.Equal(t, 0, code, errs)
	var l struct{ Calls []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(out), &l))
	require.Len(t, l.Calls, 1)
	require.Equal(t, "c-rej", l.Calls[0]["call_id"])

	out, _, code = runIn(t, getenv, "calls", "list", "--number", "pn_1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "c-full")
	require.NotContains(t, out, "c-rej")
	out, _, _ = runIn(t, getenv, "calls", "list", "--number", "+18005550100", "--since", "2024-05-01T12:00:30Z")
	require.NotContains(t, out, "c-full")
	require.Contains(t, out, "c-rej")

	out, errs, code = runIn(t, getenv, "calls", "show", "c-full")
	require.Equal(t, 0, code, errs)
	for _, s := range []string{
		"Call         c-full", "Number       +18005550100 (pn_1)", "by appliance: conversation ended", "Duration     1m05s",
		"3250 packets in, 3240 out, 4 lost, jitter 2.0 ms, 1 late, 2 concealed",
		"Health       loss 0.1%, first audio 40 ms after answer, turn latency p50 800 ms p95 950 ms max 950 ms (3 turns), 1 barge-ins, one-way audio, degraded: one_way_audio",
		"Recording    -",
		"Transcript\n  [00:03.0] assistant: Hello there.\n  [00:05.5] user: Book a table.\n",
		"Tool calls\n  [00:06.0] tool_call book {\"people\":2}\n", "Events\n  [00:07.0] dtmf 1\n",
	} {
		require.Contains(t, out, s)
	}
	out, _, code = runIn(t, getenv, "calls", "show", "--json", "c-rej")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"ended_by": "rejected"`)
	out, _, _ = runIn(t, getenv, "calls", "show", "c-rej")
	require.Contains(t, out, "Transcript\n  (none)")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calls", "show", "nope"}, "404 not_found"},
		{[]string{"calls", "show"}, "exactly one call id"},
		{[]string{"calls", "list", "--state", "done"}, "(param state)"},
		{[]string{"calls", "list", "--since", "yesterday"}, "--since"},
		{[]string{"calls", "list", "--limit", "-1"}, "--limit"},
		{[]string{"calls", "purge"}, "usage: switchboard calls dial|dtmf|hangup|hold|list|refer|resume|show|transfer"},
	} {
		_, errs, code = runIn(t, getenv, tc.args...)
		require.NotEqual(t, 0, code, tc.args)
		require.Contains(t, errs, tc.want, tc.args)
	}
}

func TestHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{{0, "0.0s"}, {1234, "1.2s"}, {59_949, "59.9s"}, {60_000, "1m00s"}, {65_000, "1m05s"}, {3_725_000, "1h02m05s"}} {
		require.Equal(t, tc.want, humanDuration(tc.ms), tc.ms)
	}
}
