package conversation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/realtime"
)

func historyTexts(h *history) []string {
	out := make([]string, 0, len(h.items))
	for _, it := range h.items {
		out = append(out, it.Content[0].Text)
	}
	return out
}

// TestHistory: the last 200 items are kept; a late line goes back where
// its turn ended, or at the end when that place was cut.
func TestHistory(t *testing.T) {
	var h history
	h.remember(realtime.UserText("u1"))
	h.remember(realtime.UserText("a1"))
	seq := h.seq // the caller's second turn ends here
	h.remember(realtime.UserText("a2"))
	h.insertAt(seq, realtime.UserText("u2"))
	require.Equal(t, []string{"u1", "a1", "u2", "a2"}, historyTexts(&h))
	h.insertAt(h.seq, realtime.UserText("u3"))
	require.Equal(t, []string{"u1", "a1", "u2", "a2", "u3"}, historyTexts(&h), "at the end: appended")

	for i := range 300 {
		h.remember(realtime.UserText(fmt.Sprint(i)))
	}
	require.Len(t, h.items, maxHistory)
	require.Equal(t, "100", h.items[0].Content[0].Text)
	require.Equal(t, 305, h.seq)
	h.insertAt(seq, realtime.UserText("late"))
	require.Len(t, h.items, maxHistory, "its place was cut: remembered at the end")
	require.Equal(t, "late", h.items[maxHistory-1].Content[0].Text)
}
