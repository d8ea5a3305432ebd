package records_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/call"
	"switchboard/records"
)

// TestRecordContext: the context a call ran with is the record's own
// field, not one of its events, and survives the JSON of a stored record.
func TestRecordContext(t *testing.T) {
	ctxNote := call.Note{Kind: call.NoteContext, Data: &call.Context{
		Variables: map[string]string{"caller.number": "+14155550123", "sip.X-Account-Id": "42"},
		Missing:   []string{"variables.plan"}, AgentID: "ag_1",
		ContextURL: &call.ContextFetch{LatencyMS: 12.5, Applied: []string{}, Error: "context_url did not answer within 1.5s"}}}
	rec := records.Of(call.Snapshot{ID: "c1", State: call.StateActive, Notes: []call.Note{ctxNote, {Kind: call.NoteDTMF, Text: "1"}}})
	require.NotNil(t, rec.Context)
	require.Equal(t, "42", rec.Context.Variables["sip.X-Account-Id"])
	require.Equal(t, []string{"variables.plan"}, rec.Context.Missing)
	require.Len(t, rec.Events, 1, "the context is not an event")
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	ctx := back["context"].(map[string]any)
	require.Equal(t, "ag_1", ctx["agent_id"])
	require.Equal(t, "context_url did not answer within 1.5s", ctx["context_url"].(map[string]any)["error"])

	// A call without one has no context field.
	b, err = json.Marshal(records.Of(call.Snapshot{ID: "c2", State: call.StateActive}))
	require.NoError(t, err)
	require.NotContains(t, string(b), `"context"`)
}
