package conversation

import "switchboard/realtime"

// maxHistory bounds the items kept for re-seeding a reconnect: the last
// 200 carry the conversation's thread; a longer call loses its start.
const maxHistory = 200

// history is what the model heard and said, kept (Run goroutine) so a new
// session after a reconnect starts from the conversation so far. It counts
// every item ever remembered, so a late line (a fallback transcript) goes
// back to where its turn happened even after the oldest items were cut.
type history struct {
	items []realtime.Item
	seq   int // items ever remembered (items is trimmed)
}

// remember keeps an item at the end, bounded to the last maxHistory.
func (h *history) remember(it realtime.Item) {
	h.seq++
	h.items = append(h.items, it)
	if len(h.items) > maxHistory {
		h.items = h.items[len(h.items)-maxHistory:]
	}
}

// insertAt puts it where the history stood when seq items had been
// remembered (the moment its turn ended); when that place was cut or is
// past the end, it is remembered at the end.
func (h *history) insertAt(seq int, it realtime.Item) {
	if i := seq - (h.seq - len(h.items)); i >= 0 && i < len(h.items) {
		h.seq++
		h.items = append(h.items[:i], append([]realtime.Item{it}, h.items[i:]...)...)
		return
	}
	h.remember(it)
}
