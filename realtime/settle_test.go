package realtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func typesOf(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.EventType())
	}
	return out
}

// TestSettleFoldsTheConfiguration: while the opening session.update is
// pending, the provider's session.created and what follows are held; the
// answer is delivered as session.created (the created event's id, the
// updated session), a refusal releases everything in order, and a
// provider that never answers cannot make the session hold events
// without bound.
func TestSettleFoldsTheConfiguration(t *testing.T) {
	instr := "configured"
	created := &SessionCreated{Header: Header{EventID: "ev1"}, Session: SessionConfig{Model: "provider-default"}}
	conv := &ConversationCreated{Header: Header{EventID: "ev2"}}
	updated := &SessionUpdated{Header: Header{EventID: "ev3"}, Session: SessionConfig{Model: "m", Instructions: &instr}}

	s := &wsSession{configuring: true, opts: Options{EventBuffer: 4}}
	require.Empty(t, s.settle(created))
	require.Empty(t, s.settle(conv))
	out := s.settle(updated)
	require.Equal(t, []string{TypeSessionCreated, TypeConversationCreated}, typesOf(out))
	c := out[0].(*SessionCreated)
	require.Equal(t, "ev1", c.EventID)
	require.Equal(t, "configured", *c.Session.Instructions)
	require.False(t, s.configuring)
	later := s.settle(updated) // a later session.updated passes as it is
	require.Equal(t, []string{TypeSessionUpdated}, typesOf(later))

	s = &wsSession{configuring: true, opts: Options{EventBuffer: 4}}
	s.settle(created)
	s.settle(conv)
	refused := &ErrorEvent{Error: ErrorDetail{Type: ErrorInvalidRequest, Code: "invalid_value", Message: "no"}}
	out = s.settle(refused)
	require.Equal(t, []string{TypeSessionCreated, TypeConversationCreated, TypeError}, typesOf(out))
	require.Equal(t, "provider-default", out[0].(*SessionCreated).Session.Model)

	s = &wsSession{configuring: true, opts: Options{EventBuffer: 2}}
	s.settle(created)
	s.settle(conv)
	s.settle(conv)
	out = s.settle(conv)
	require.Equal(t, []string{TypeSessionCreated, TypeConversationCreated, TypeConversationCreated, TypeConversationCreated}, typesOf(out))
	require.False(t, s.configuring)
}
