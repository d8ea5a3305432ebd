package records

import "switchboard/call"

// LiveCalls is what the Service reads of the calls in progress.
type LiveCalls interface {
	// Unstored returns the current view of the live calls whose record is
	// not in the store (yet): the listing shows them above the stored
	// records.
	Unstored() []call.Snapshot
	// All returns the current view of every live call.
	All() []call.Snapshot
	// LiveSnapshot returns the current view of one live call, stored or
	// not: it replaces the call's stored record, which may lag behind.
	LiveSnapshot(id string) (call.Snapshot, bool)
}

// Join reads several sources of live calls, in order: a call found in
// more than one is taken from the first.
func Join(sources ...LiveCalls) LiveCalls { return joined(sources) }

type joined []LiveCalls

func (j joined) Unstored() []call.Snapshot {
	var out []call.Snapshot
	seen := map[string]bool{}
	for _, src := range j {
		for _, s := range src.Unstored() {
			if !seen[s.ID] {
				seen[s.ID] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func (j joined) All() []call.Snapshot {
	var out []call.Snapshot
	seen := map[string]bool{}
	for _, src := range j {
		for _, s := range src.All() {
			if !seen[s.ID] {
				seen[s.ID] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func (j joined) LiveSnapshot(id string) (call.Snapshot, bool) {
	for _, src := range j {
		if s, ok := src.LiveSnapshot(id); ok {
			return s, true
		}
	}
	return call.Snapshot{}, false
}
